// createWatchdog(): the reference agent-sdk-watchdog 0.2.0 API on the Rust core's idle policy
// (crates/core/src/idle_policy.rs through the addon in the platform package).
//
// Layout: every registered query is one row of a Float64Array (the core's slab layout), so a
// message costs a table lookup and a store, never a native call; a pass over every query is one
// native call that also returns the next deadline, where the one unref'd timer is armed.
import { core } from './native.mjs';
import { checkOption, resolveOptions } from './options.mjs';
import { watchdogOptions } from '../index.js';

export const WATCHDOG_DEFAULTS = Object.freeze({
  // 10 min: above the longest measured productive silence (8m48s).
  idleMs: 10 * 60 * 1000,
  extendFactor: 2,
  highUtilization: 0.9,
  tickMs: 30 * 1000,
  writeTools: Object.freeze(['Write', 'Edit']),
  toolHeartbeats: true,
  getUtilization: () => null,
  now: () => Date.now(),
  onError: () => {},
});

const num = (v) => (v === null || v === undefined ? NaN : +v);

const VERDICTS = [
  () => ({ verdict: 'ok' }),
  () => ({ verdict: 'extend', reason: 'pre_write' }),
  () => ({ verdict: 'extend', reason: 'high_utilization' }),
  () => ({ verdict: 'kill', kind: 'watchdog_idle' }),
  () => ({ verdict: 'kill', kind: 'hard_ceiling' }),
];

/** The pure policy: one timeline, one instant, one utilization, the limits -> verdict. */
export function evaluateWatchdog(t, now, utilization, limits = WATCHDOG_DEFAULTS) {
  const { addon } = core();
  const code = addon.evaluate(
    num(t.startedAt),
    num(t.lastToolAt),
    t.lastActivityAt === undefined ? num(t.lastToolAt) : num(t.lastActivityAt),
    num(t.firstWriteAt),
    num(t.hardCeilingMs),
    !!t.settled,
    num(now),
    num(utilization),
    num(limits.idleMs),
    num(limits.extendFactor),
    num(limits.highUtilization),
  );
  return VERDICTS[code]();
}

export function createWatchdog(config = {}) {
  const c = resolveOptions(WATCHDOG_DEFAULTS, config);
  checkOption('idleMs', c.idleMs, 'a number > 0', (v) => v > 0);
  checkOption('extendFactor', c.extendFactor, 'a number >= 1', (v) => v >= 1);
  checkOption('highUtilization', c.highUtilization, 'a number in [0, 1]', (v) => v >= 0 && v <= 1);
  checkOption('tickMs', c.tickMs, 'a number > 0', (v) => v > 0);
  const { addon, table, layout: L } = core();
  const S = L.STRIDE;
  const { STARTED_AT, LAST_TOOL_AT, LAST_ACTIVITY_AT, FIRST_WRITE_AT, HARD_CEILING_MS, FLAGS, SEQ } = L;
  const { LIVE, SETTLED, KILLED, EXTEND_NOTED } = L;
  const { EFFECT_SETTLE, EFFECT_ALIVE, EFFECT_WORK, EFFECT_HEARTBEAT_WORK } = L;
  const { now: clock, writeTools, toolHeartbeats, idleMs, extendFactor, highUtilization } = c;

  const w = {
    rows: new Float64Array(16 * S),
    verdicts: new Int32Array(16),
    handles: [], // slot -> handle
    free: [],
    top: 0, // rows in use (high-water mark)
    live: 0,
    seq: 0,
    util: NaN, // the last check's utilization, for deadlines between checks
    timer: null,
    timerAt: Infinity,
  };

  const rearm = (slot, now) =>
    arm(addon.nextCheck(w.rows, slot, now, w.util, idleMs, extendFactor, highUtilization));

  // "Working": clear `settled` and move the activity clock; re-arm when it un-settled (the
  // idle deadline is back and may come before the armed timer).
  function working(slot, at) {
    const b = slot * S;
    const rows = w.rows;
    rows[b + LAST_ACTIVITY_AT] = at;
    const flags = rows[b + FLAGS];
    if (flags & SETTLED) {
      rows[b + FLAGS] = flags & ~SETTLED;
      rearm(slot, at);
    }
  }

  // One supervised query: a slot of the slab. `_slot` is -1 once unregistered (or closed).
  class WatchdogHandle {
    constructor(slot, reg) {
      this._slot = slot;
      this._reg = reg;
      this._kill = null;
    }

    activity(toolName, at = clock()) {
      const s = this._slot;
      if (s < 0) return;
      const b = s * S;
      const rows = w.rows;
      rows[b + LAST_TOOL_AT] = at;
      working(s, at);
      if (Number.isNaN(rows[b + FIRST_WRITE_AT]) && toolName && writeTools.includes(toolName)) {
        rows[b + FIRST_WRITE_AT] = at;
        rearm(s, at); // patience shrinks: the deadline may come earlier
      }
    }

    stream(at = clock()) {
      if (this._slot >= 0) working(this._slot, at);
    }

    heartbeat(at = clock()) {
      if (this._slot >= 0) w.rows[this._slot * S + LAST_ACTIVITY_AT] = at;
    }

    settle() {
      const s = this._slot;
      if (s >= 0) w.rows[s * S + FLAGS] = w.rows[s * S + FLAGS] | SETTLED;
    }

    observe(message, at = clock()) {
      let effect = table.get(message.type);
      if (effect === undefined) return;
      if (typeof effect !== 'number') {
        effect = effect.get(message.subtype);
        if (effect === undefined) return;
      }
      const s = this._slot;
      if (s < 0) return;
      if (effect === EFFECT_WORK || (effect === EFFECT_HEARTBEAT_WORK && toolHeartbeats)) working(s, at);
      else if (effect === EFFECT_ALIVE) w.rows[s * S + LAST_ACTIVITY_AT] = at;
      else if (effect === EFFECT_SETTLE) w.rows[s * S + FLAGS] = w.rows[s * S + FLAGS] | SETTLED;
    }

    get kill() {
      return this._kill;
    }

    /**
     * The query() options that run this session through the native claude-watchdog with this
     * watchdog's limits (and `policy` over them): `pathToClaudeCodeExecutable`, `env` and this
     * registration's `abortController`.
     */
    nativeOptions(policy = {}, env = process.env) {
      const ceiling = this._reg.hardCeilingMs;
      const base = {
        idle: `${Math.ceil(idleMs)}ms`,
        extendFactor,
        highUtilization,
        writeTools: [...writeTools],
      };
      if (typeof ceiling === 'number' && ceiling > 0 && Number.isFinite(ceiling)) {
        base.ceiling = `${Math.ceil(ceiling)}ms`;
      }
      return { ...watchdogOptions({ ...base, ...policy }, env), abortController: this._reg.abortController };
    }

    unregister() {
      const s = this._slot;
      if (s < 0) return;
      this._slot = -1;
      w.rows[s * S + FLAGS] = 0;
      w.handles[s] = undefined;
      w.free.push(s);
      w.live -= 1;
      if (w.live === 0) disarm();
    }
  }

  const report = (error) => {
    try {
      c.onError(error);
    } catch {
      // dropped: onError itself threw
    }
  };

  function disarm() {
    if (w.timer) clearTimeout(w.timer);
    w.timer = null;
    w.timerAt = Infinity;
  }

  // The one timer: at the earliest deadline, and at most tickMs away (the reference's periodic
  // check, which also notices a utilization that fell). Never holds the process open.
  function arm(deadline) {
    if (w.live === 0) return disarm();
    const now = c.now();
    const at = Math.min(deadline, now + c.tickMs);
    if (w.timer && at >= w.timerAt) return;
    disarm();
    w.timerAt = at;
    w.timer = setTimeout(onTimer, Math.max(1, Math.ceil(at - now)));
    w.timer.unref?.();
  }

  function onTimer() {
    w.timer = null;
    w.timerAt = Infinity;
    tick();
  }

  function tick(now = c.now()) {
    let utilization = null;
    try {
      utilization = c.getUtilization(now);
    } catch (error) {
      report(error);
    }
    w.util = num(utilization);
    const kills = [];
    if (w.live === 0) return kills;
    const next = addon.evaluateSlab(
      w.rows, w.top, now, w.util, c.idleMs, c.extendFactor, c.highUtilization, w.verdicts,
    );
    const actions = [];
    const { verdicts, rows, handles } = w;
    for (let s = 0; s < w.top; s++) {
      const v = verdicts[s];
      if (v <= 0) continue;
      if (v < 3 && rows[s * S + L.FLAGS] & L.EXTEND_NOTED) continue;
      actions.push(s);
    }
    // Callbacks in registration order, as the reference's insertion-ordered Set gives them.
    if (actions.length > 1) actions.sort((x, y) => rows[x * S + L.SEQ] - rows[y * S + L.SEQ]);
    const hs = actions.map((s) => handles[s]);
    // Re-armed below at `next`; a query registered by a callback arms it for itself meanwhile.
    disarm();
    for (let i = 0; i < actions.length; i++) {
      const s = actions[i];
      const h = hs[i];
      if (!h || h._slot !== s) continue; // unregistered (or closed) by an earlier callback
      const v = verdicts[s];
      const b = s * S;
      const reg = h._reg;
      if (v >= 3) {
        const kill = {
          kind: v === 3 ? 'watchdog_idle' : 'hard_ceiling',
          elapsedMs: now - w.rows[b + L.STARTED_AT],
          sinceToolMs: now - w.rows[b + L.LAST_TOOL_AT],
        };
        w.rows[b + L.FLAGS] = w.rows[b + L.FLAGS] | L.KILLED;
        h._kill = kill;
        try {
          reg.onKill?.(kill);
        } catch (error) {
          report(error);
        }
        reg.abortController.abort();
        kills.push(kill);
      } else {
        w.rows[b + L.FLAGS] = w.rows[b + L.FLAGS] | L.EXTEND_NOTED;
        try {
          reg.onExtend?.(v === 1 ? 'pre_write' : 'high_utilization', utilization);
        } catch (error) {
          report(error);
        }
      }
    }
    arm(next);
    return kills;
  }

  function register(reg, now = c.now()) {
    let slot = w.free.pop();
    if (slot === undefined) {
      slot = w.top++;
      if (w.top > w.verdicts.length) {
        const rows = new Float64Array(w.verdicts.length * 2 * S);
        rows.set(w.rows);
        w.rows = rows;
        w.verdicts = new Int32Array(w.verdicts.length * 2);
      }
    }
    const b = slot * S;
    const rows = w.rows;
    rows[b + L.STARTED_AT] = now;
    rows[b + L.LAST_TOOL_AT] = now;
    rows[b + L.LAST_ACTIVITY_AT] = now;
    rows[b + L.FIRST_WRITE_AT] = NaN;
    rows[b + L.HARD_CEILING_MS] = num(reg.hardCeilingMs);
    rows[b + L.FLAGS] = L.LIVE;
    rows[b + L.SEQ] = w.seq++;
    const handle = new WatchdogHandle(slot, reg);
    w.handles[slot] = handle;
    w.live += 1;
    rearm(slot, now);
    return handle;
  }

  function close() {
    for (const h of w.handles) if (h) h._slot = -1;
    w.handles = [];
    w.free = [];
    w.top = 0;
    w.live = 0;
    w.rows = new Float64Array(16 * S);
    w.verdicts = new Int32Array(16);
    disarm();
  }

  return { register, tick, close, config: c };
}

/**
 * A PreToolUse / PostToolUse / PostToolUseFailure hook feeding one handle. Only PostToolUse
 * passes the tool name: a write a hook denied, or one that failed, is not a write.
 */
export function makeWatchdogHook(handle) {
  return async (input) => {
    const event = input?.hook_event_name;
    if (event === 'PostToolUse') handle.activity(input.tool_name);
    else if (event === 'PreToolUse' || event === 'PostToolUseFailure') handle.activity();
    return {};
  };
}

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

// The core's verdict codes (idle_policy::Verdict::code); 5 to 7 are our opt-in rules.
const KINDS = [null, null, null, 'watchdog_idle', 'hard_ceiling', 'startup', 'linger', 'no_progress'];
const VERDICTS = [
  () => ({ verdict: 'ok' }),
  () => ({ verdict: 'extend', reason: 'pre_write' }),
  () => ({ verdict: 'extend', reason: 'high_utilization' }),
];
const verdictOf = (code) => (code >= 3 ? { verdict: 'kill', kind: KINDS[code] } : VERDICTS[code]());

// Our opt-in rules (off unless given): validated like the reference's options.
const EXTRA = ['startupMs', 'lingerMs', 'noProgressMs'];
const off = (v) => (v === undefined ? Infinity : num(v));
const limitsArray = (l) =>
  new Float64Array([num(l.idleMs), num(l.extendFactor), num(l.highUtilization), off(l.startupMs), off(l.lingerMs), off(l.noProgressMs)]);

/** The pure policy: one timeline, one instant, one utilization, the limits -> verdict. */
export function evaluateWatchdog(t, now, utilization, limits = WATCHDOG_DEFAULTS) {
  const { addon, layout: L } = core();
  const row = new Float64Array(L.STRIDE);
  row[L.STARTED_AT] = num(t.startedAt);
  row[L.LAST_TOOL_AT] = num(t.lastToolAt);
  row[L.LAST_ACTIVITY_AT] = t.lastActivityAt === undefined ? num(t.lastToolAt) : num(t.lastActivityAt);
  // null: no write yet; any other value (even undefined) counts as written, as in the reference.
  row[L.FIRST_WRITE_AT] = t.firstWriteAt === null ? NaN : -Infinity;
  row[L.HARD_CEILING_MS] = num(t.hardCeilingMs);
  // Our opt-in rules read three optional fields: seen (default true), settledAt, lastWorkAt.
  row[L.FLAGS] = L.LIVE | (t.seen === false ? 0 : L.SEEN) | (t.settled ? L.SETTLED : 0);
  row[L.SETTLED_AT] = t.settledAt === undefined ? NaN : num(t.settledAt);
  row[L.LAST_WORK_AT] =
    t.lastWorkAt === undefined ? Math.max(row[L.LAST_TOOL_AT], row[L.LAST_ACTIVITY_AT]) : num(t.lastWorkAt);
  return verdictOf(addon.evaluate(row, num(now), num(utilization), limitsArray(limits)));
}

export function createWatchdog(config = {}) {
  const c = resolveOptions(WATCHDOG_DEFAULTS, config);
  checkOption('idleMs', c.idleMs, 'a number > 0', (v) => v > 0);
  checkOption('extendFactor', c.extendFactor, 'a number >= 1', (v) => v >= 1);
  checkOption('highUtilization', c.highUtilization, 'a number in [0, 1]', (v) => v >= 0 && v <= 1);
  checkOption('tickMs', c.tickMs, 'a number > 0', (v) => v > 0);
  for (const name of EXTRA) {
    if (c[name] !== undefined) checkOption(name, c[name], 'a number > 0', (v) => v > 0);
  }
  const { addon, table, layout: L } = core();
  const S = L.STRIDE;
  const { STARTED_AT, LAST_TOOL_AT, LAST_ACTIVITY_AT, FIRST_WRITE_AT, HARD_CEILING_MS, FLAGS, SEQ } = L;
  const { SETTLED_AT, LAST_WORK_AT, LIVE, SETTLED, KILLED, EXTEND_NOTED, SEEN } = L;
  const { EFFECT_SETTLE, EFFECT_ALIVE, EFFECT_WORK, EFFECT_HEARTBEAT_WORK } = L;
  const { now: clock, writeTools, toolHeartbeats, idleMs, extendFactor, highUtilization } = c;
  const limits = limitsArray(c);
  const startupOn = c.startupMs !== undefined;
  const lingerOn = c.lingerMs !== undefined;

  const w = {
    rows: new Float64Array(16 * S),
    verdicts: new Int32Array(16),
    handles: [], // slot -> handle
    results: [], // slot -> the last result message observe() saw (read when the query ends)
    free: [],
    top: 0, // rows in use (high-water mark)
    live: 0,
    seq: 0,
    util: NaN, // the last check's utilization, for deadlines between checks
    timer: null,
    timerAt: Infinity,
  };
  // Counted where a kill or an extension is delivered and where a query ends (the core's
  // counters and rendering: README "Fleet telemetry"); a message costs nothing here.
  const counters = new addon.MetricsCore();

  const rearm = (slot, now) => arm(addon.nextCheck(w.rows, slot, now, w.util, limits));

  // "Working": clear `settled` and move the activity clock; re-arm when it un-settled (the
  // idle deadline is back and may come before the armed timer).
  function working(slot, at) {
    const b = slot * S;
    const rows = w.rows;
    rows[b + LAST_ACTIVITY_AT] = at;
    rows[b + LAST_WORK_AT] = at;
    const flags = rows[b + FLAGS];
    if (flags & SETTLED) {
      rows[b + FLAGS] = (flags & ~SETTLED) | SEEN;
      rearm(slot, at);
    } else if (!(flags & SEEN)) rows[b + FLAGS] = flags | SEEN;
  }

  // A result: settle, and remember when (the linger rule, when on, counts from there).
  function settle(slot, at) {
    const i = slot * S + FLAGS;
    const flags = w.rows[i];
    if (flags & SETTLED) return;
    w.rows[i] = flags | SETTLED | SEEN;
    w.rows[slot * S + SETTLED_AT] = at;
    if (lingerOn) rearm(slot, at);
  }

  function heartbeat(slot, at) {
    const b = slot * S;
    w.rows[b + LAST_ACTIVITY_AT] = at;
    if (!(w.rows[b + FLAGS] & SEEN)) w.rows[b + FLAGS] = w.rows[b + FLAGS] | SEEN;
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
      if (this._slot >= 0) heartbeat(this._slot, at);
    }

    settle() {
      if (this._slot >= 0) settle(this._slot, clock());
    }

    observe(message, at = clock()) {
      const s = this._slot;
      if (s < 0) return;
      // Any message at all ends the startup wait (our opt-in rule).
      if (startupOn && !(w.rows[s * S + FLAGS] & SEEN)) w.rows[s * S + FLAGS] = w.rows[s * S + FLAGS] | SEEN;
      let effect = table.get(message.type);
      if (effect === undefined) return;
      if (typeof effect !== 'number') {
        effect = effect.get(message.subtype);
        if (effect === undefined) return;
      }
      if (effect === EFFECT_WORK || (effect === EFFECT_HEARTBEAT_WORK && toolHeartbeats)) working(s, at);
      else if (effect === EFFECT_ALIVE) heartbeat(s, at);
      else if (effect === EFFECT_SETTLE) {
        w.results[s] = message;
        settle(s, at);
      }
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
      if (c.startupMs !== undefined) base.startup = `${Math.ceil(c.startupMs)}ms`;
      if (c.lingerMs !== undefined) base.linger = `${Math.ceil(c.lingerMs)}ms`;
      if (c.noProgressMs !== undefined) base.noProgress = `${Math.ceil(c.noProgressMs)}ms`;
      return { ...watchdogOptions({ ...base, ...policy }, env), abortController: this._reg.abortController };
    }

    unregister() {
      const s = this._slot;
      if (s < 0) return;
      this._slot = -1;
      // The query ended: counted by its kill, else by its last result.
      const r = w.results[s];
      w.results[s] = undefined;
      const str = (v) => (typeof v === 'string' ? v : undefined);
      counters.end(
        this._kill ? KINDS.indexOf(this._kill.kind) : 0,
        r !== undefined,
        str(r?.subtype),
        typeof r?.is_error === 'boolean' ? r.is_error : undefined,
        str(r?.stop_reason),
      );
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
    const before = w.util;
    w.util = num(utilization);
    const kills = [];
    if (w.live === 0) return kills;
    const next = addon.evaluateSlab(
      w.rows, w.top, now, w.util, limits, w.verdicts,
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
          kind: KINDS[v],
          elapsedMs: now - w.rows[b + L.STARTED_AT],
          sinceToolMs: now - w.rows[b + L.LAST_TOOL_AT],
        };
        counters.kill(w.rows, s, v, now, before, w.util, limits);
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
        counters.extension(v);
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
    rows[b + SETTLED_AT] = NaN;
    rows[b + LAST_WORK_AT] = now;
    const handle = new WatchdogHandle(slot, reg);
    w.handles[slot] = handle;
    w.live += 1;
    rearm(slot, now);
    return handle;
  }

  function close() {
    for (const h of w.handles) if (h) h._slot = -1;
    w.handles = [];
    w.results = [];
    w.free = [];
    w.top = 0;
    w.live = 0;
    w.rows = new Float64Array(16 * S);
    w.verdicts = new Int32Array(16);
    disarm();
  }

  // The fleet metrics: plain data keyed by the series' label values (kill kinds as the
  // registry names them: `idle`, `ceiling`), and the same as Prometheus text.
  function metrics() {
    const m = JSON.parse(counters.snapshotJson(w.live, w.util));
    return {
      sessions: m.sessions,
      utilization: m.utilization,
      ended: m.ended,
      endedKilled: m.ended_killed,
      kills: m.kills,
      stallingWarnings: m.stalling_warnings,
      extensions: m.extensions,
      killLateness: {
        count: m.kill_lateness.count,
        sumSeconds: m.kill_lateness.sum,
        buckets: m.kill_lateness.buckets.map(([le, n]) => [le === null ? Infinity : le, n]),
      },
    };
  }

  const renderPrometheus = () => counters.render(w.live, w.util);

  return { register, tick, close, config: c, metrics, renderPrometheus };
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

// createWatchdog(): the reference agent-sdk-watchdog 0.2.0 API on the Rust core's Registry
// (its reference preset: crates/wasm/src/reference.rs), in the WebAssembly module of
// ./core.mjs. Every rule is the core's: this file looks a message up in the core's table,
// hands the row's number over, and delivers what a tick found (callbacks, aborts) in the
// reference's order. One unref'd timer per watchdog, armed at the core's next deadline.
import { core, owned, read, records, rowOf, tables, write, writeAll } from './core.mjs';
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
const { effects: EFFECT, kills: KILL_NAMES, extends: EXTEND_NAMES, record: RECORD } = tables;

const verdictOf = (code) => {
  if (code === 0) return { verdict: 'ok' };
  if (EXTEND_NAMES[code]) return { verdict: 'extend', reason: EXTEND_NAMES[code] };
  return { verdict: 'kill', kind: KILL_NAMES[code] };
};

// Our opt-in rules (off unless given): validated like the reference's options.
const EXTRA = ['startupMs', 'lingerMs', 'noProgressMs'];
const off = (v) => (v === undefined ? Infinity : num(v));

/** The pure policy: one timeline, one instant, one utilization, the limits -> verdict. */
export function evaluateWatchdog(t, now, utilization, limits = WATCHDOG_DEFAULTS) {
  const lastToolAt = num(t.lastToolAt);
  return verdictOf(
    core.evaluate(
      num(t.startedAt),
      lastToolAt,
      t.lastActivityAt === undefined ? lastToolAt : num(t.lastActivityAt),
      // null: no write yet; any other value (even undefined) counts as written, as in the reference.
      t.firstWriteAt === null ? 0 : 1,
      num(t.hardCeilingMs),
      t.settled ? 1 : 0,
      t.settledAt === undefined ? NaN : num(t.settledAt),
      t.lastWorkAt === undefined ? NaN : num(t.lastWorkAt),
      t.seen === false ? 0 : 1,
      num(now),
      num(utilization),
      num(limits.idleMs),
      num(limits.extendFactor),
      num(limits.highUtilization),
      off(limits.startupMs),
      off(limits.lingerMs),
      off(limits.noProgressMs),
    ),
  );
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
  const { now: clock, writeTools, toolHeartbeats, idleMs, extendFactor, highUtilization } = c;
  const startupOn = c.startupMs !== undefined;
  const tools = write([...writeTools].filter((t) => typeof t === 'string').join('\n'));
  const w = core.wd_new(
    idleMs, extendFactor, highUtilization, off(c.startupMs), off(c.lingerMs), off(c.noProgressMs),
    toolHeartbeats ? 1 : 0, tools,
  );
  if (w < 0) throw new RangeError(read(core.output_len()));
  const state = {
    handles: [], // slot -> handle
    live: 0,
    seq: 0,
    util: null, // the last check's utilization
    timer: null,
    timerAt: Infinity,
  };
  // The module's watchdog goes when `state` does: every method, handle and the timer hold it.
  owned.register(state, { free: core.wd_free, index: w });

  // Work and signs of life on a query that is not settled only move its deadlines later, so
  // they wait here, a time per query, until anything else reaches the core (a tick, another
  // feed, a registration): then they go in time order, each query's latest. A message thus
  // costs no call into the core; the core still decides everything, at the next call, with
  // every time exact. Work on a settled query (it un-settles: the idle deadline comes back)
  // goes at once. `_settled` is what this side sent last: a result or settle() settles, work
  // does not; nothing else settles a query of this API.
  let waiting = [];
  const wait = (h) => {
    h._waiting = true;
    waiting.push(h);
  };
  function flush() {
    if (waiting.length === 0) return;
    const hs = waiting;
    waiting = [];
    const due = [];
    for (const h of hs) {
      h._waiting = false;
      if (h._slot >= 0) {
        if (h._alive === h._alive) due.push([h._alive, h, false]);
        if (h._work === h._work) due.push([h._work, h, true]);
      }
      h._work = NaN;
      h._alive = NaN;
    }
    if (due.length > 1) due.sort((a, b) => a[0] - b[0]);
    for (const [at, h, work] of due) {
      if (h._slot < 0) continue;
      if (work) core.wd_stream(w, h._slot, at);
      else core.wd_heartbeat(w, h._slot, at);
    }
  }

  // One supervised query: a slot of the core's table. `_slot` is -1 once unregistered (or
  // closed); its feeds then change nothing.
  class WatchdogHandle {
    constructor(slot, reg, seq, startedAt) {
      this._slot = slot;
      this._reg = reg;
      this._seq = seq;
      this._startedAt = startedAt;
      this._kill = null;
      this._started = false;
      this._settled = false;
      this._waiting = false;
      this._work = NaN;
      this._alive = NaN;
      this._result = undefined;
    }

    activity(toolName, at = clock()) {
      if (this._slot < 0) return;
      flush();
      const n = typeof toolName === 'string' && toolName ? write(toolName) : -1;
      this._settled = false;
      sooner(core.wd_activity(w, this._slot, n, at));
    }

    _work_(at, row) {
      if (this._settled) {
        flush();
        this._settled = false;
        sooner(row < 0 ? core.wd_stream(w, this._slot, at) : core.wd_observe(w, this._slot, row, at));
      } else {
        this._work = at;
        if (!this._waiting) wait(this);
      }
    }

    _alive_(at) {
      this._alive = at;
      if (!this._waiting) wait(this);
    }

    stream(at = clock()) {
      if (this._slot >= 0) this._work_(at, -1);
    }

    heartbeat(at = clock()) {
      if (this._slot >= 0) this._alive_(at);
    }

    settle() {
      if (this._slot < 0) return;
      flush();
      this._settled = true;
      core.wd_settle(w, this._slot, clock());
    }

    observe(message, at = clock()) {
      if (this._slot < 0) return;
      const row = rowOf(message);
      const effect = row === undefined ? EFFECT.none : row.effect;
      if (effect === EFFECT.work || (effect === EFFECT.heartbeatWork && toolHeartbeats)) {
        this._work_(at, row.index);
      } else if (effect === EFFECT.alive) {
        this._alive_(at);
      } else if (effect === EFFECT.settle) {
        // Kept for the end: its facts decide the outcome the query ends with (unregister()).
        this._result = message;
        if (!this._settled) {
          flush();
          this._settled = true;
          core.wd_settle(w, this._slot, at);
        }
      } else if (effect === EFFECT.line) {
        // Ours: background tasks and announced back-offs, read whole by the core (they can
        // bring a deadline back on a settled query).
        flush();
        sooner(core.wd_line(w, this._slot, write(JSON.stringify(message)), at));
      } else if (startupOn && !this._started) {
        // Ignored, but any message at all ends the startup wait (our opt-in rule).
        this._started = true;
        flush();
        core.wd_observe(w, this._slot, -1, at);
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
      // The query ended: counted by its kill, else by its last result's facts (the core's rule).
      const r = this._result;
      this._result = undefined;
      const str = (v) => (typeof v === 'string' ? v : '');
      const has = (v) => (typeof v === 'string' ? 1 : 0);
      const [subtype, stop] = writeAll([str(r?.subtype), str(r?.stop_reason)]);
      core.wd_unregister(
        w, s, r === undefined ? 0 : 1,
        has(r?.subtype) ? subtype : -1,
        typeof r?.is_error === 'boolean' ? Number(r.is_error) : -1,
        has(r?.stop_reason) ? stop : -1,
      );
      state.handles[s] = undefined;
      state.live -= 1;
      if (state.live === 0) disarm();
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
    if (state.timer) clearTimeout(state.timer);
    state.timer = null;
    state.timerAt = Infinity;
  }

  // The one timer: at the core's next deadline, and at most tickMs away (the reference's
  // periodic check, which also reads a utilization that fell). Never holds the process open.
  function arm(next = core.wd_poll_timeout(w)) {
    if (state.live === 0) return disarm();
    const now = clock();
    const at = Math.min(next, now + c.tickMs);
    if (state.timer && at >= state.timerAt) return;
    disarm();
    state.timerAt = at;
    state.timer = setTimeout(onTimer, Math.max(1, Math.ceil(at - now)));
    state.timer.unref?.();
  }
  // A feed brought the core's next deadline to `next` (Infinity: not sooner than it was).
  const sooner = (next) => {
    if (next < state.timerAt) arm(next);
  };

  function onTimer() {
    state.timer = null;
    state.timerAt = Infinity;
    tick();
  }

  function tick(now = clock()) {
    let utilization = null;
    try {
      utilization = c.getUtilization(now);
    } catch (error) {
      report(error);
    }
    state.util = utilization;
    const kills = [];
    flush();
    const n = core.wd_tick(w, now, num(utilization));
    if (n === 0) {
      arm();
      return kills;
    }
    const r = records(n, RECORD);
    const found = [];
    for (let i = 0; i < n; i++) {
      const b = i * RECORD;
      const h = state.handles[r[b]];
      if (h) found.push({ i, h, slot: r[b], what: r[b + 1], code: r[b + 2], lastTool: r[b + 4] });
    }
    // Callbacks in registration order, as the reference's insertion-ordered Set gives them.
    found.sort((x, y) => x.h._seq - y.h._seq);
    // Re-armed below; a query registered by a callback arms it for itself meanwhile.
    disarm();
    for (const f of found) {
      const { h } = f;
      if (h._slot !== f.slot) continue; // unregistered (or closed) by an earlier callback
      const reg = h._reg;
      core.wd_deliver(w, f.i);
      if (f.what === 1) {
        const kill = { kind: KILL_NAMES[f.code], elapsedMs: now - h._startedAt, sinceToolMs: now - f.lastTool };
        h._kill = kill;
        try {
          reg.onKill?.(kill);
        } catch (error) {
          report(error);
        }
        reg.abortController.abort();
        kills.push(kill);
      } else {
        try {
          reg.onExtend?.(EXTEND_NAMES[f.code], utilization);
        } catch (error) {
          report(error);
        }
      }
    }
    arm();
    return kills;
  }

  function register(reg, now = c.now()) {
    flush();
    const slot = core.wd_register(w, now, num(reg.hardCeilingMs));
    const handle = new WatchdogHandle(slot, reg, state.seq++, now);
    state.handles[slot] = handle;
    state.live += 1;
    arm();
    return handle;
  }

  function close() {
    for (const h of state.handles) if (h) h._slot = -1;
    waiting = [];
    state.handles = [];
    state.live = 0;
    core.wd_clear(w);
    disarm();
  }

  // The fleet metrics: plain data keyed by the series' label values (kill kinds as the
  // registry names them: `idle`, `ceiling`), and the same as Prometheus text.
  function metrics() {
    const m = JSON.parse(read(core.wd_metrics_json(w)));
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

  const renderPrometheus = () => read(core.wd_render_prometheus(w));

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

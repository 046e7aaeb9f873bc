// createWatchdog(): the reference agent-sdk-watchdog 0.2.0 API on the Rust core's Registry
// (its reference preset: crates/wasm/src/reference.rs), in the WebAssembly module of
// ./core.mjs. Every rule and default is the core's: this file looks a message up in the core's
// table, keeps what it must tell the core, and delivers what a check found (callbacks, aborts)
// in the reference's order. One unref'd timer per watchdog, armed at the core's next deadline.
import { byLength, core, handOver, lookup, owned, read, records, tables, write } from './core.mjs';
import { checkOption, resolveOptions } from './options.mjs';
import { watchdogOptions } from '../index.js';

const D = tables.defaults.watchdog;
export const WATCHDOG_DEFAULTS = Object.freeze({
  idleMs: D.idleMs,
  extendFactor: D.extendFactor,
  highUtilization: D.highUtilization,
  tickMs: D.tickMs,
  writeTools: Object.freeze(D.writeTools),
  toolHeartbeats: D.toolHeartbeats,
  getUtilization: () => null,
  now: () => Date.now(),
  onError: () => {},
});

const num = (v) => (v === null || v === undefined ? NaN : +v);
const { effects: EFFECT, kills: KILL_NAMES, extends: EXTEND_NAMES, record: RECORD } = tables;
const { none: NONE, settle: SETTLE, alive: ALIVE, work: WORK, line: LINE } = EFFECT;
const { always: ALWAYS, ifTrue: IF_TRUE } = tables.reads;

const verdictOf = (code) => {
  if (code === 0) return { verdict: 'ok' };
  if (EXTEND_NAMES[code]) return { verdict: 'extend', reason: EXTEND_NAMES[code] };
  return { verdict: 'kill', kind: KILL_NAMES[code] };
};

// The most messages (with what came between them) a handle holds for the core between checks.
const QUEUE = 64;

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
  const { writeTools, toolHeartbeats, idleMs, extendFactor, highUtilization } = c;
  const startupOn = c.startupMs !== undefined;
  const tools = write([...writeTools].filter((t) => typeof t === 'string').join('\n'));
  const w = core.wd_new(
    idleMs, extendFactor, highUtilization, off(c.startupMs), off(c.lingerMs), off(c.noProgressMs),
    toolHeartbeats ? 1 : 0, tools,
  );
  if (w < 0) throw new RangeError(read(core.output_len()));
  // The core's observe table under these options: a message's `type`, then its `subtype`, to
  // its row (what it does, and what the core reads of it); and the row of a `result`.
  const table = JSON.parse(read(core.wd_table(w)));
  const TYPES = byLength(table.types.map(([type, t]) => [type, { any: t.any ?? undefined, subs: t.subs && byLength(t.subs) }]));
  const result = table.settles;
  const state = {
    handles: [], // slot -> handle
    live: 0,
    timer: null,
    next: Infinity, // the core's deadline the timer is armed for
  };
  // The module's watchdog goes when `state` does: every method, handle and the timer hold it.
  owned.register(state, { free: core.wd_free, index: w });

  // What a query's messages do is kept on its handle, each the last of its kind (the
  // reference's assignments: its last work, its last sign of life, whether it is settled),
  // with the messages the core reads whole queued in order between them, and told to the core
  // before the core is next asked about that query: at a check, or before a tool boundary. A
  // message thus costs a table lookup. Nothing untold brings a deadline earlier, but for work
  // or a message read whole on a query the core holds as settled: then the timer comes no
  // later than the soonest deadline a message can bring (the core's bound), and re-arms.
  const soonest = core.wd_soonest(w);
  let waiting = [];
  const wait = (h) => {
    h._waiting = true;
    waiting.push(h);
  };
  const untold = (h) => h._work === h._work || h._last === h._last || h._settled !== h._told;
  const sync = (h, q) => core.wd_sync(w, h._slot, q._work, q._last, q._settled ? 1 : 0, q._settledAt);
  function tell(h) {
    const queue = h._queue;
    h._queue = undefined;
    for (const q of queue ?? []) {
      if (q.row === undefined) sync(h, q);
      else core.wd_line(w, h._slot, handOver(q.row, q.message), q.at);
    }
    const next = sync(h, h);
    h._work = NaN;
    h._last = NaN;
    h._told = h._settled;
    return next;
  }

  // One supervised query: a slot of the core's table. `_slot` is -1 once unregistered (or
  // closed); its feeds then change nothing.
  class WatchdogHandle {
    constructor(slot, reg) {
      this._slot = slot;
      this._reg = reg;
      this._kill = null;
      this._work = NaN; // untold: the last work
      this._last = NaN; // untold: the last sign of life of any kind
      this._settled = false; // the reference's flag
      this._told = false; // the flag the core holds
      this._settledAt = NaN;
      this._waiting = false;
      this._started = false;
      this._result = undefined;
      this._queue = undefined; // untold: messages the core reads whole, in order with the rest
      this._adds = false; // a message that may add background work was read
    }

    activity(toolName, at = c.now()) {
      if (this._slot < 0) return;
      if (this._queue !== undefined || untold(this)) tell(this);
      const n = typeof toolName === 'string' && toolName ? write(toolName) : -1;
      this._settled = false;
      this._told = false;
      sooner(core.wd_activity(w, this._slot, n, at), at);
    }

    stream(at = c.now()) {
      if (this._slot >= 0) this._working(at);
    }

    heartbeat(at = c.now()) {
      if (this._slot < 0) return;
      this._last = at;
      if (!this._waiting) wait(this);
    }

    settle() {
      if (this._slot >= 0) this._settle(NaN);
    }

    observe(message, at = c.now()) {
      if (this._slot < 0) return;
      const t = lookup(TYPES, message.type);
      const row = t === undefined ? undefined : t.subs === null ? t.any : (lookup(t.subs, message.subtype) ?? t.any);
      let effect = row === undefined ? NONE : row.effect;
      // Ours: background tasks and announced back-offs, read when they bring what the core
      // keeps (the row says when); otherwise ignored, as the reference ignores them.
      if (effect === LINE && row.read !== ALWAYS && !this._adds && !(row.read === IF_TRUE && message[row.readIf] === true)) {
        effect = NONE;
      }
      if (effect === WORK) {
        this._working(at);
      } else if (effect === ALIVE) {
        this._last = at;
        if (!this._waiting) wait(this);
      } else if (effect === SETTLE) {
        // Kept for the end: its facts decide the outcome the query ends with (unregister()).
        this._result = message;
        this._settle(at);
      } else if (effect === LINE) {
        // Read by the core whole (it can bring a deadline back on a settled query), in order
        // with what came before.
        if (row.adds) this._adds = true;
        const queue = (this._queue ??= []);
        if (untold(this)) {
          const { _work, _last, _settled, _settledAt } = this;
          queue.push({ _work, _last, _settled, _settledAt });
          this._work = NaN;
          this._last = NaN;
          this._told = _settled;
        }
        queue.push({ row, message, at });
        // A stream of such messages between two checks: told in batches, held no longer.
        if (queue.length > QUEUE) return sooner(tell(this), at);
        this._back(at);
      } else if (startupOn && !this._started) {
        // Ignored, but any message at all ends the startup wait (our opt-in rule).
        this._started = true;
        sooner(core.wd_started(w, this._slot, at), at);
      }
    }

    _working(at) {
      this._work = at;
      this._last = at;
      this._settled = false;
      this._back(at);
    }

    // Untold since `at`; the core may hold the query settled.
    _back(at) {
      if (this._told) sooner(at + soonest, at);
      if (!this._waiting) wait(this);
    }

    _settle(at) {
      if (this._settled) return;
      this._settled = true;
      this._settledAt = at;
      if (!this._waiting) wait(this);
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
      core.wd_unregister(w, s, r === undefined ? -1 : handOver(result, r));
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
    state.next = Infinity;
  }

  // The one timer: at the core's next deadline `next`, from the caller's instant `from` that
  // brought it, and at most tickMs away (the reference's periodic check, which also reads a
  // utilization that fell). Never holds the process open; reads no clock.
  function arm(next, from) {
    disarm();
    if (state.live === 0) return;
    state.next = next;
    const delay = next - from < c.tickMs ? next - from : c.tickMs;
    state.timer = setTimeout(onTimer, Math.max(1, Math.ceil(delay)));
    state.timer.unref?.();
  }
  // A feed at `from` left the core's next deadline at `next`.
  const sooner = (next, from) => {
    if (next < state.next) arm(next, from);
  };

  function onTimer() {
    state.timer = null;
    state.next = Infinity;
    tick();
  }

  function tick(now = c.now()) {
    let utilization = null;
    try {
      utilization = c.getUtilization(now);
    } catch (error) {
      report(error);
    }
    for (const h of waiting) {
      h._waiting = false;
      if (h._slot >= 0 && (h._queue !== undefined || untold(h))) tell(h);
    }
    waiting = [];
    const n = core.wd_tick(w, now, num(utilization));
    const kills = [];
    const next = core.wd_poll_timeout(w);
    // Nothing found, the next deadline the one armed: the timer stands.
    if (n === 0 && state.timer && next === state.next) return kills;
    // In registration order (the reference's insertion-ordered Set); each handle found before
    // any callback runs (a callback may unregister a query and another take its slot).
    const r = records(n, RECORD);
    const found = Array.from({ length: n }, (_, i) => state.handles[r[i * RECORD]]);
    // Re-armed below; a query registered by a callback arms it for itself meanwhile.
    disarm();
    for (let i = 0; i < n; i++) {
      const h = found[i];
      const [slot, what, code, startedAt, lastToolAt] = r.subarray(i * RECORD, (i + 1) * RECORD);
      if (h === undefined || h._slot !== slot) continue; // unregistered (or closed) by an earlier callback
      const reg = h._reg;
      core.wd_deliver(w, i);
      if (what === 1) {
        const kill = { kind: KILL_NAMES[code], elapsedMs: now - startedAt, sinceToolMs: now - lastToolAt };
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
          reg.onExtend?.(EXTEND_NAMES[code], utilization);
        } catch (error) {
          report(error);
        }
      }
    }
    arm(n === 0 ? next : core.wd_poll_timeout(w), now);
    return kills;
  }

  function register(reg, now = c.now()) {
    const slot = core.wd_register(w, now, Number(reg.hardCeilingMs));
    const handle = new WatchdogHandle(slot, reg);
    state.handles[slot] = handle;
    state.live += 1;
    sooner(core.wd_poll_timeout(w), now);
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
    m.killLateness.buckets = m.killLateness.buckets.map(([le, n]) => [le ?? Infinity, n]);
    return m;
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

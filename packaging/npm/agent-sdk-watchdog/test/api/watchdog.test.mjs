// createWatchdog & co. against the INSTALLED package (scripts/test-node-api runs this in a fresh
// project): the reference 0.2.0 behaviour, in virtual time, plus exact deadlines on a real timer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  createWatchdog,
  evaluateWatchdog,
  makeWatchdogHook,
  WATCHDOG_DEFAULTS,
  watchdogOptions,
} from 'agent-sdk-watchdog';

const T0 = 1e9;
const MIN = 60_000;
const at = (m) => T0 + m * MIN;
const ceiling70 = 70 * MIN;

/** A watchdog on a virtual clock (`clock.t`), its timer never due in a test's lifetime. */
function virtual(config = {}) {
  const clock = { t: T0 };
  const w = createWatchdog({ now: () => clock.t, ...config });
  return { clock, w };
}

function lane(w, extra = {}) {
  const ac = new AbortController();
  const kills = [];
  const extends_ = [];
  const h = w.register({
    hardCeilingMs: ceiling70,
    abortController: ac,
    onKill: (k) => kills.push(k),
    onExtend: (r, u) => extends_.push([r, u]),
    ...extra,
  }, T0);
  return { h, ac, kills, extends: extends_ };
}

test('defaults: the reference values, frozen, and an undefined option keeps its default', () => {
  assert.equal(WATCHDOG_DEFAULTS.idleMs, 600_000);
  assert.equal(WATCHDOG_DEFAULTS.extendFactor, 2);
  assert.equal(WATCHDOG_DEFAULTS.highUtilization, 0.9);
  assert.equal(WATCHDOG_DEFAULTS.tickMs, 30_000);
  assert.deepEqual([...WATCHDOG_DEFAULTS.writeTools], ['Write', 'Edit']);
  assert.equal(WATCHDOG_DEFAULTS.toolHeartbeats, true);
  assert.equal(WATCHDOG_DEFAULTS.getUtilization(0), null);
  assert.ok(Math.abs(WATCHDOG_DEFAULTS.now() - Date.now()) < 1000);
  assert.equal(WATCHDOG_DEFAULTS.onError(new Error('x')), undefined);
  assert.ok(Object.isFrozen(WATCHDOG_DEFAULTS));
  assert.ok(Object.isFrozen(WATCHDOG_DEFAULTS.writeTools));
  const w = createWatchdog({ idleMs: undefined, extendFactor: 3 });
  assert.equal(w.config.idleMs, 600_000);
  assert.equal(w.config.extendFactor, 3);
  assert.ok(Object.isFrozen(w.config));
  w.close();
});

test('RangeError messages, in the reference order', () => {
  const cases = [
    [{ idleMs: 0 }, 'idleMs must be a number > 0, got 0'],
    [{ idleMs: -1 }, 'idleMs must be a number > 0, got -1'],
    [{ extendFactor: 0.5 }, 'extendFactor must be a number >= 1, got 0.5'],
    [{ highUtilization: 1.5 }, 'highUtilization must be a number in [0, 1], got 1.5'],
    [{ tickMs: NaN }, 'tickMs must be a number > 0, got NaN'],
    [{ idleMs: Infinity }, 'idleMs must be a number > 0, got Infinity'],
    [{ tickMs: '5' }, 'tickMs must be a number > 0, got 5'],
    // idleMs is checked first
    [{ idleMs: 0, tickMs: 0 }, 'idleMs must be a number > 0, got 0'],
    [{ extendFactor: 0, highUtilization: 2 }, 'extendFactor must be a number >= 1, got 0'],
  ];
  for (const [config, message] of cases) {
    assert.throws(() => createWatchdog(config), (e) => e instanceof RangeError && e.message === message);
  }
});

test('evaluateWatchdog: the pure policy, boundaries inclusive, ceiling first', () => {
  const written = { startedAt: T0, lastToolAt: T0, firstWriteAt: T0, hardCeilingMs: ceiling70 };
  const pre = { ...written, firstWriteAt: null };
  assert.deepEqual(evaluateWatchdog(written, at(8.8), 0.4), { verdict: 'ok' });
  assert.deepEqual(evaluateWatchdog(written, at(11), 0.4), { verdict: 'kill', kind: 'watchdog_idle' });
  assert.deepEqual(evaluateWatchdog(written, at(10), null), { verdict: 'kill', kind: 'watchdog_idle' });
  assert.deepEqual(evaluateWatchdog(written, at(11), 0.92), { verdict: 'extend', reason: 'high_utilization' });
  assert.deepEqual(evaluateWatchdog(written, at(21), 0.92), { verdict: 'kill', kind: 'watchdog_idle' });
  assert.deepEqual(evaluateWatchdog(pre, at(15), 0.3), { verdict: 'extend', reason: 'pre_write' });
  assert.deepEqual(evaluateWatchdog(pre, at(15), 0.95), { verdict: 'extend', reason: 'high_utilization' });
  assert.deepEqual(evaluateWatchdog(pre, at(21), null), { verdict: 'kill', kind: 'watchdog_idle' });
  const busy = { ...written, lastActivityAt: at(71) - 5000 };
  assert.deepEqual(evaluateWatchdog(busy, at(71), null), { verdict: 'kill', kind: 'hard_ceiling' });
  assert.deepEqual(evaluateWatchdog({ ...written, settled: true }, at(25), null), { verdict: 'ok' });
  assert.deepEqual(evaluateWatchdog({ ...written, settled: true }, at(70), null), { verdict: 'kill', kind: 'hard_ceiling' });
  // The limits argument applies.
  const limits = { idleMs: MIN, extendFactor: 1, highUtilization: 0.5 };
  assert.deepEqual(evaluateWatchdog(pre, at(1), 0.6, limits), { verdict: 'kill', kind: 'watchdog_idle' });
});

test('registry lifecycle: pre-write extension once, a Write ends it, one kill, then abort', () => {
  const { w } = virtual();
  const q = lane(w);
  q.h.activity('Read', at(9));
  assert.deepEqual(w.tick(at(12)), []);
  assert.deepEqual(w.tick(at(24)), []);
  assert.deepEqual(q.extends, [['pre_write', null]]);
  q.h.activity('Write', at(25));
  const kills = w.tick(at(36));
  assert.equal(kills.length, 1);
  assert.deepEqual(kills[0], { kind: 'watchdog_idle', elapsedMs: 36 * MIN, sinceToolMs: 11 * MIN });
  assert.equal(q.kills.length, 1);
  assert.equal(q.ac.signal.aborted, true);
  assert.deepEqual(w.tick(at(37)), []);
  assert.equal(q.kills.length, 1);
  q.h.unregister();
  assert.equal(q.h.kill, kills[0]);
  w.close();
});

test('onKill runs before the abort, and the abort happens even when onKill throws', () => {
  const errors = [];
  const { w } = virtual({ onError: (e) => errors.push(e) });
  const order = [];
  const ac = new AbortController();
  ac.signal.addEventListener('abort', () => order.push('abort'));
  const boom = new Error('boom');
  w.register({ hardCeilingMs: MIN, abortController: ac, onKill: () => { order.push('onKill'); throw boom; } }, T0);
  const next = lane(w);
  const kills = w.tick(at(1));
  assert.deepEqual(order, ['onKill', 'abort']);
  assert.deepEqual(errors, [boom]);
  assert.equal(kills.length, 1);
  assert.equal(kills[0].kind, 'hard_ceiling');
  assert.equal(next.kills.length, 0);
  assert.equal(w.tick(at(21)).length, 1); // the next query is still checked
  w.close();
});

test('a class-instance registration keeps its own this', () => {
  const { w } = virtual();
  class Reg {
    constructor() { this.hardCeilingMs = MIN; this.abortController = new AbortController(); this.seen = null; }
    onKill(k) { this.seen = k; }
  }
  const r = new Reg();
  w.register(r, T0);
  w.tick(at(2));
  assert.equal(r.seen.kind, 'hard_ceiling');
  assert.equal(r.abortController.signal.aborted, true);
  w.close();
});

test('utilization: extends once with its value; a withdrawn extension kills at the next check', () => {
  let u = 0.95;
  const seen = [];
  const { w } = virtual({ getUtilization: (now) => { seen.push(now); return u; } });
  const q = lane(w);
  q.h.activity('Write', T0);
  assert.deepEqual(w.tick(at(12)), []);
  assert.deepEqual(seen, [at(12)]);
  assert.deepEqual(w.tick(at(13)), []);
  assert.deepEqual(q.extends, [['high_utilization', 0.95]]);
  u = 0.4; // the extension is withdrawn: past idleMs, the next check kills
  assert.equal(w.tick(at(14)).length, 1);
  w.close();
});

// Each scenario on a watchdog of its own: within one watchdog time never runs backwards (a
// registration or feed dated before the latest instant it has seen counts at that instant).
test('stream clock, heartbeat and settle', () => {
  {
    const { w } = virtual();
    const q = lane(w);
    q.h.activity('Write', T0);
    q.h.stream(at(15) - 10_000); // no check since T0: the frame counts before the check at 15
    assert.deepEqual(w.tick(at(15)), []);
    assert.deepEqual(w.tick(at(24.5)), []);
    assert.equal(w.tick(at(25.5)).length, 1);
    w.close();
  }
  {
    const { w } = virtual();
    const r = lane(w);
    r.h.activity('Write', at(1));
    r.h.heartbeat(at(4));
    assert.deepEqual(w.tick(at(13)), []);
    assert.equal(w.tick(at(14.5)).length, 1);
    w.close();
  }
  {
    const { w } = virtual();
    const s = lane(w);
    s.h.observe({ type: 'result', subtype: 'success' }, at(5));
    s.h.observe({ type: 'rate_limit_event', rate_limit_info: { status: 'allowed' } }, at(6));
    assert.deepEqual(w.tick(at(40)), []); // settled, a heartbeat keeps it settled
    s.h.observe({ type: 'stream_event', event: { type: 'ping' } }, at(41)); // new work
    assert.deepEqual(w.tick(at(60)), []); // pre-write: 20 min patience
    assert.equal(w.tick(at(61)).length, 1);
    w.close();
  }
  {
    const { w } = virtual();
    const c = lane(w);
    c.h.settle();
    assert.deepEqual(w.tick(at(69)), []);
    assert.equal(w.tick(at(70))[0].kind, 'hard_ceiling');
    w.close();
  }
});

test('ours: background work after a result keeps the clocks running; an announced back-off holds them', () => {
  const tasks = (list) => ({ type: 'system', subtype: 'background_tasks_changed', tasks: list, session_id: 's' });
  const agent = { task_id: 'a1', task_type: 'local_agent', description: 'p' };
  const result = { type: 'result', subtype: 'success', is_error: false, session_id: 's' };
  {
    // The reference would call this query settled at 2 and never kill it: a background agent
    // that wedged after the result keeps it open for ever.
    const { w } = virtual();
    const q = lane(w);
    q.h.activity('Write', T0);
    q.h.observe(tasks([agent]), at(1));
    q.h.observe(result, at(2)); // settles without moving a clock, as for the reference
    assert.deepEqual(w.tick(at(10.9)), []);
    // Ours: an idle kill with a background task outstanding names it: task_silent.
    assert.deepEqual(w.tick(at(11)).map((k) => k.kind), ['task_silent']);
    w.close();
  }
  {
    // Ours: a background task's own progress is its sign of life: a task that reports
    // progress every 8 minutes outlives the 10-minute idle patience; once it falls silent,
    // the idle kill names it (task_silent), 10 minutes after its last progress.
    const { w } = virtual();
    const q = lane(w);
    q.h.activity('Write', T0);
    q.h.observe({ type: 'system', subtype: 'task_started', task_id: 'a1', tool_use_id: 'toolu_a1', description: 'Audit', is_backgrounded: true, session_id: 's' }, at(1));
    q.h.observe(result, at(2));
    for (const m of [9, 17, 25]) {
      assert.deepEqual(w.tick(at(m - 0.1)), []);
      q.h.observe({ type: 'system', subtype: 'task_progress', task_id: 'a1', description: 'Audit', session_id: 's' }, at(m));
    }
    assert.deepEqual(w.tick(at(34.9)), []);
    assert.deepEqual(w.tick(at(35)).map((k) => k.kind), ['task_silent']);
    w.close();
  }
  {
    // When the tasks end, the query is settled: only the ceiling.
    const { w } = virtual();
    const q = lane(w);
    q.h.activity('Write', T0);
    q.h.observe(tasks([agent]), at(1));
    q.h.observe(result, at(2));
    q.h.observe({ type: 'system', subtype: 'task_notification', task_id: 'a1', status: 'completed', session_id: 's' }, at(5));
    assert.deepEqual(w.tick(at(60)), []);
    assert.deepEqual(w.tick(at(70)).map((k) => k.kind), ['hard_ceiling']);
    w.close();
  }
  {
    // A task started in the background mid-turn, among stream frames and a task that was
    // not (ignored, as the reference ignores it): after the result the query works until the
    // background task's end, told to the core at the next check, in order.
    const { w } = virtual();
    const q = lane(w);
    q.h.activity('Write', T0);
    const frame = { type: 'stream_event', event: { type: 'content_block_delta' } };
    const task = (id, extra) => ({ type: 'system', subtype: 'task_started', task_id: id, session_id: 's', ...extra });
    q.h.observe(frame, at(1));
    q.h.observe(task('fg', { is_backgrounded: false }), at(1.5));
    q.h.observe(task('bg', { is_backgrounded: true }), at(2));
    q.h.observe(frame, at(3));
    q.h.observe(result, at(4));
    assert.deepEqual(w.tick(at(12.9)), []); // idle since the frame at 3
    // The idle kill with the background task outstanding names it.
    assert.deepEqual(w.tick(at(13)).map((k) => k.kind), ['task_silent']);
    const r = lane(w);
    r.h.activity('Write', T0);
    r.h.observe(task('bg', { is_backgrounded: true }), at(2));
    r.h.observe(result, at(4));
    r.h.observe({ type: 'system', subtype: 'task_notification', task_id: 'bg', status: 'completed', session_id: 's' }, at(5));
    assert.deepEqual(w.tick(at(69)), []);
    w.close();
  }
  {
    // An announced 15-minute back-off at 1: the idle clock restarts when it ends.
    const { w } = virtual();
    const q = lane(w);
    q.h.activity('Write', T0);
    q.h.observe({ type: 'system', subtype: 'api_retry', attempt: 1, retry_delay_ms: 15 * MIN, error_status: 529, error: 'overloaded', session_id: 's' }, at(1));
    assert.deepEqual(w.tick(at(25.9)), []);
    assert.deepEqual(w.tick(at(26)).map((k) => k.kind), ['watchdog_idle']);
    w.close();
  }
});

test('observe classification: what moves the clock and what does not', () => {
  const cases = [
    [{ type: 'stream_event', event: { type: 'content_block_delta' } }, false],
    [{ type: 'system', subtype: 'thinking_tokens' }, false],
    [{ type: 'rate_limit_event', rate_limit_info: {} }, false],
    [{ type: 'tool_progress', tool_name: 'Bash' }, false],
    [{ type: 'assistant', message: {} }, true],
    [{ type: 'system', subtype: 'init' }, true],
    [{ type: 'user', message: {} }, true],
    // A task that does not run in the background, and its end: nothing the core keeps, so
    // ignored, as the reference ignores them.
    [{ type: 'system', subtype: 'task_started', task_id: 't', is_backgrounded: false }, true],
    [{ type: 'system', subtype: 'task_notification', task_id: 't', status: 'completed' }, true],
    [{ type: 'system', subtype: 'task_progress', task_id: 't' }, true],
  ];
  for (const [message, killed] of cases) {
    const { w } = virtual();
    const q = lane(w);
    q.h.activity('Write', T0);
    q.h.observe(message, at(5));
    assert.equal(w.tick(at(11)).length, killed ? 1 : 0, JSON.stringify(message));
    w.close();
  }
  // toolHeartbeats: false ignores tool_progress
  const { w } = virtual({ toolHeartbeats: false });
  const q = lane(w);
  q.h.activity('Write', T0);
  for (let s = 30; s <= 12 * 60; s += 30) q.h.observe({ type: 'tool_progress' }, T0 + s * 1000);
  assert.equal(w.tick(at(12)).length, 1);
  w.close();
});

test('options change verdicts: idleMs, extendFactor, writeTools', () => {
  {
    const { w } = virtual({ idleMs: MIN });
    const q = lane(w);
    q.h.activity('Write', T0);
    assert.equal(w.tick(at(2)).length, 1);
    w.close();
  }
  {
    const { w } = virtual({ extendFactor: 1 });
    lane(w);
    assert.equal(w.tick(at(11)).length, 1);
    w.close();
  }
  {
    const { w } = virtual({ writeTools: ['Bash'] });
    const a = lane(w);
    a.h.activity('Bash', T0);
    const b = lane(w);
    b.h.activity('Write', T0);
    const kills = w.tick(at(11));
    assert.deepEqual(kills, [a.h.kill]);
    assert.equal(b.h.kill, null);
    w.close();
  }
});

test('instances, fan-out, unregister, close', () => {
  const { w } = virtual();
  const other = virtual().w;
  const a = lane(w);
  const b = lane(w);
  a.h.activity('Write', T0);
  b.h.activity('Write', T0);
  a.h.stream(at(9));
  assert.deepEqual(other.tick(at(11)), []);
  const kills = w.tick(at(11));
  assert.deepEqual(kills, [b.h.kill]);
  assert.equal(a.h.kill, null);
  a.h.unregister();
  a.h.unregister(); // idempotent
  a.h.stream(at(30)); // a detached handle changes nothing
  assert.deepEqual(w.tick(at(40)), []);
  const c = lane(w);
  w.close();
  assert.deepEqual(w.tick(at(100)), []);
  assert.equal(c.h.kill, null);
  const d = lane(w); // register after close works
  assert.equal(w.tick(at(70)).length, 1);
  assert.ok(d.h.kill);
  other.close();
  w.close();
});

test('no cascade: a sibling killed does not shorten the others', () => {
  const { w } = virtual();
  const lanes = [lane(w), lane(w), lane(w), lane(w)];
  for (const l of lanes) l.h.activity('Write', T0);
  for (const l of lanes.slice(0, 3)) l.h.stream(at(1.5));
  assert.deepEqual(w.tick(at(10.5)), [lanes[3].h.kill]);
  assert.deepEqual(w.tick(at(11.4)), []);
  assert.equal(w.tick(at(11.5)).length, 3);
  w.close();
});

test('the hook: only a completed PostToolUse write ends pre-write', async () => {
  for (const [input, killed] of [
    [{ hook_event_name: 'PostToolUse', tool_name: 'Write' }, true],
    [{ hook_event_name: 'PreToolUse', tool_name: 'Write' }, false],
    [{ hook_event_name: 'PostToolUseFailure', tool_name: 'Write' }, false],
  ]) {
    const { clock, w } = virtual();
    const q = lane(w);
    clock.t = at(10);
    assert.deepEqual(await makeWatchdogHook(q.h)(input, undefined, { signal: new AbortController().signal }), {});
    assert.equal(w.tick(at(21)).length, killed ? 1 : 0, input.hook_event_name);
    w.close();
  }
});

test('an injected now is used by register, activity and tick', () => {
  const { clock, w } = virtual();
  const ac = new AbortController();
  const h = w.register({ hardCeilingMs: ceiling70, abortController: ac });
  clock.t = at(1);
  h.activity('Write');
  clock.t = at(11.5);
  const [kill] = w.tick();
  assert.deepEqual(kill, { kind: 'watchdog_idle', elapsedMs: 11.5 * MIN, sinceToolMs: 10.5 * MIN });
  w.close();
});

// The watchdog's timer is unref'd (it must never hold a host open), so a test that waits for a
// kill holds the event loop open itself, as a live query's child process would.
function aborted(ac) {
  const hold = setTimeout(() => {}, 10_000);
  return new Promise((r) => ac.signal.addEventListener('abort', () => { clearTimeout(hold); r(); }));
}

test('exact deadlines: a kill lands at its deadline, not at a tick', async () => {
  const w = createWatchdog({ idleMs: 40, extendFactor: 1 });
  const ac = new AbortController();
  const t0 = Date.now();
  let killedAt = 0;
  const h = w.register({ hardCeilingMs: 60_000, abortController: ac, onKill: () => { killedAt = Date.now(); } });
  const done = aborted(ac);
  await new Promise((r) => setTimeout(r, 20));
  const streamed = Date.now();
  h.stream(streamed); // moves the deadline to streamed + 40
  await done;
  const late = killedAt - (streamed + 40);
  assert.equal(h.kill.kind, 'watchdog_idle');
  // Never early; late only by the event loop's own delay (the bench measures it: BENCHMARKS.md),
  // where a tick-based watchdog is up to tickMs (30 s) late. The bound is loose for a loaded CI.
  assert.ok(late >= 0 && late < 1000, `kill came ${late} ms after its deadline`);
  w.close();
});

test('exact deadlines: un-settling and the first write re-arm an earlier deadline', async () => {
  const w = createWatchdog({ idleMs: 30 });
  const ac = new AbortController();
  const h = w.register({ hardCeilingMs: 60_000, abortController: ac });
  h.settle();
  w.tick(); // settled: only the 60 s ceiling is left, so the timer is re-armed tickMs (30 s) away
  await new Promise((r) => setTimeout(r, 10));
  const t = Date.now();
  h.activity('Write'); // un-settles and ends pre-write: killed 30 ms from now
  await aborted(ac);
  assert.ok(Date.now() - t < 1000, `killed ${Date.now() - t} ms after the write, not at its 30 ms deadline`);
  w.close();
});

test('the timer never keeps the process alive', () => {
  const script = `
    import { createWatchdog } from 'agent-sdk-watchdog';
    const w = createWatchdog({ idleMs: 3_600_000 });
    w.register({ hardCeilingMs: 7_200_000, abortController: new AbortController() });
    globalThis.w = w;
  `;
  const t = Date.now();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout + r.stderr, ''); // the library prints nothing
  assert.ok(Date.now() - t < 10_000);
});

// scripts/test-node-api installs the package as users on other platforms get it: there, no
// platform package, so no binaries, and the in-process API above works all the same.
const binaries = process.env.EXPECT_BINARIES;
if (binaries !== '0' && binaries !== '1') throw new Error(`EXPECT_BINARIES must be 0 or 1, got ${binaries}`);

function withoutBinaries() {
  const w = createWatchdog({ idleMs: 90_000 });
  const h = w.register({ hardCeilingMs: 3_600_000, abortController: new AbortController() });
  let message = '';
  assert.throws(() => h.nativeOptions(), (e) => {
    message = e.message;
    return true;
  });
  assert.match(message, new RegExp(`claude-watchdog for ${process.platform}-${process.arch}`));
  assert.match(message, /: the in-process API \(createWatchdog & co\.\) works without it$/);
  assert.doesNotMatch(message, /reinstall|--omit/i);
  assert.doesNotMatch(message, /\n/);
  assert.throws(() => watchdogOptions(), (e) => e.message === message);
  // The launcher says the same in one line and fails.
  const launcher = fileURLToPath(new URL('../node_modules/agent-sdk-watchdog/bin/agent-watchdog.js', import.meta.url));
  const r = spawnSync(process.execPath, [launcher, '--version'], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, `agent-watchdog: ${message.replaceAll('claude-watchdog', 'agent-watchdog')}\n`);
  w.close();
}

test('nativeOptions: the drop-in claude-watchdog with this watchdog\'s limits; without binaries, one line says what is missing and what still works', () => {
  if (binaries === '0') {
    withoutBinaries();
    return;
  }
  const w = createWatchdog({ idleMs: 90_000, extendFactor: 3, highUtilization: 0.8, writeTools: ['Write'] });
  const ac = new AbortController();
  const h = w.register({ hardCeilingMs: 3_600_000, abortController: ac });
  const o = h.nativeOptions({ grace: 2 }, { PATH: '/bin' });
  assert.equal(o.abortController, ac);
  assert.equal(o.pathToClaudeCodeExecutable, watchdogOptions().pathToClaudeCodeExecutable);
  assert.match(o.pathToClaudeCodeExecutable, /claude-watchdog$/);
  assert.equal(o.env.PATH, '/bin');
  assert.equal(o.env.AGENT_WATCHDOG_IDLE, '90000ms');
  assert.equal(o.env.AGENT_WATCHDOG_CEILING, '3600000ms');
  assert.equal(o.env.AGENT_WATCHDOG_EXTEND_FACTOR, '3');
  assert.equal(o.env.AGENT_WATCHDOG_HIGH_UTILIZATION, '0.8');
  assert.equal(o.env.AGENT_WATCHDOG_WRITE_TOOLS, 'Write');
  assert.equal(o.env.AGENT_WATCHDOG_GRACE, '2');
  w.close();
});

test('our opt-in rules: off by default, validated, and each kills at its own deadline', () => {
  assert.equal('startupMs' in WATCHDOG_DEFAULTS, false); // the reference's defaults, unchanged
  for (const name of ['startupMs', 'lingerMs', 'noProgressMs']) {
    assert.throws(() => createWatchdog({ [name]: 0 }),
      (e) => e instanceof RangeError && e.message === `${name} must be a number > 0, got 0`);
  }
  // Off: a query that never says anything, one that lingers after its result, and one that only
  // sends heartbeats, all live to the reference's verdicts.
  {
    const { w } = virtual();
    const silent = lane(w);
    const lingering = lane(w);
    lingering.h.observe({ type: 'result', subtype: 'success' }, at(1));
    const pinging = lane(w);
    pinging.h.activity('Write', T0);
    for (let m = 1; m <= 40; m++) pinging.h.observe({ type: 'rate_limit_event', rate_limit_info: {} }, at(m));
    silent.h.observe({ type: 'assistant' }, at(1));
    assert.deepEqual(w.tick(at(40)).map((k) => k.kind), ['watchdog_idle']); // the silent one, at 20 min patience
    assert.equal(silent.h.kill.kind, 'watchdog_idle');
    w.close();
  }
  {
    const { w } = virtual({ startupMs: 3 * MIN, lingerMs: 11 * MIN, noProgressMs: 30 * MIN });
    const silent = lane(w);
    const lingering = lane(w);
    const pinging = lane(w);
    const talking = lane(w);
    pinging.h.activity('Write', T0);
    lingering.h.observe({ type: 'assistant' }, at(0.5));
    lingering.h.observe({ type: 'result', subtype: 'success' }, at(1));
    talking.h.observe({ type: 'assistant' }, at(2)); // any message ends the startup wait
    // Pings every minute up to `until`, then a check there.
    let pinged = 0;
    const pingUntil = (until) => {
      while (pinged + 1 <= until) pinging.h.observe({ type: 'rate_limit_event', rate_limit_info: {} }, at(++pinged));
      return w.tick(at(until)).map((k) => k.kind);
    };
    assert.deepEqual(pingUntil(2.9), []);
    assert.deepEqual(pingUntil(3), ['startup']);
    assert.equal(silent.h.kill.kind, 'startup');
    assert.deepEqual(pingUntil(12), ['linger']);
    assert.equal(lingering.h.kill.kind, 'linger');
    assert.deepEqual(pingUntil(30), ['no_progress', 'watchdog_idle']); // registration order
    assert.equal(talking.h.kill.kind, 'watchdog_idle');
    assert.equal(pinging.h.kill.kind, 'no_progress');
    w.close();
  }
  assert.deepEqual(
    evaluateWatchdog({ startedAt: T0, lastToolAt: T0, lastActivityAt: at(29), lastWorkAt: T0, firstWriteAt: T0, hardCeilingMs: ceiling70 },
      at(30), null, { ...WATCHDOG_DEFAULTS, noProgressMs: 30 * MIN }),
    { verdict: 'kill', kind: 'no_progress' },
  );
});

test('callbacks that unregister, register or close during a check', () => {
  const { w } = virtual();
  let later = null;
  let b = null;
  const a = lane(w, {
    onKill: () => {
      b.h.unregister(); // a sibling due in the same pass is skipped once unregistered
      later = lane(w); // a query registered now is supervised from now on
    },
  });
  a.h.activity('Write', T0);
  b = lane(w);
  b.h.activity('Write', T0);
  const kills = w.tick(at(11));
  assert.deepEqual(kills, [a.h.kill]);
  assert.equal(b.h.kill, null);
  assert.equal(later.h.kill, null);
  later.h.activity('Write', at(11));
  assert.equal(w.tick(at(21)).length, 1);
  assert.equal(later.h.kill.kind, 'watchdog_idle');
  w.close();

  const v = virtual();
  const first = lane(v.w, { onKill: () => v.w.close() });
  first.h.activity('Write', T0);
  const second = lane(v.w);
  second.h.activity('Write', T0);
  assert.deepEqual(v.w.tick(at(11)).map((k) => k.kind), ['watchdog_idle']); // close() stopped the pass
  assert.equal(second.h.kill, null);
  assert.deepEqual(v.w.tick(at(30)), []);
});

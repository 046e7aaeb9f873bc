// The reference 0.2.0's time, against the INSTALLED package (scripts/test-node-api): a call
// given a time counts at that time, a call given none reads the configured clock (`now`,
// Date.now by default) exactly where the reference reads it, and settle() (which takes none)
// reads no clock at all. Each query's verdict at a check is the reference's, whatever order
// the instants came in: times given and times read, mixed or not, earlier or later than
// another query's or the last check's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRateLimitMonitor, createWatchdog } from 'agent-sdk-watchdog';

const T0 = 1e9;
const MIN = 60_000;
const at = (m) => T0 + m * MIN;

/** A query with a 70-minute ceiling registered at `when` (undefined: at the clock). */
function lane(w, when, extra = {}) {
  const q = { kills: [], extends: [], ac: new AbortController() };
  const reg = {
    hardCeilingMs: 70 * MIN,
    abortController: q.ac,
    onKill: (k) => q.kills.push(k),
    onExtend: (r, u) => q.extends.push([r, u]),
    ...extra,
  };
  q.h = when === undefined ? w.register(reg) : w.register(reg, when);
  return q;
}

test('the issue: fed with times, then settle() (no time), then checks with times: kept until the ceiling', () => {
  // The default clock (Date.now) is far from T0: settle() must not read it.
  const w = createWatchdog();
  const q = lane(w, T0);
  q.h.activity('Write', at(1));
  q.h.observe({ type: 'stream_event', event: { type: 'content_block_delta' } }, at(2));
  q.h.settle();
  assert.deepEqual(w.tick(at(30)), []);
  assert.deepEqual(w.tick(at(69.9)), []);
  assert.deepEqual(w.tick(at(70)), [{ kind: 'hard_ceiling', elapsedMs: 70 * MIN, sinceToolMs: 69 * MIN }]);
  w.close();
});

test('a call without a time reads the configured clock exactly where the reference reads it', () => {
  let reads = 0;
  const clock = { t: T0 };
  const w = createWatchdog({ now: () => (reads++, clock.t), getUtilization: () => null });
  const m = createRateLimitMonitor({ now: () => (reads++, clock.t) });
  const count = (f) => {
    const before = reads;
    f();
    return reads - before;
  };
  const q = lane(w, undefined);
  const frame = { type: 'rate_limit_event', rate_limit_info: { status: 'allowed', utilization: 0.9 } };
  const readsOf = {
    'register()': count(() => lane(w, undefined)),
    'register(r, t)': count(() => lane(w, T0)),
    'activity()': count(() => q.h.activity()),
    'activity(n, t)': count(() => q.h.activity('Read', T0)),
    'stream()': count(() => q.h.stream()),
    'stream(t)': count(() => q.h.stream(T0)),
    'heartbeat()': count(() => q.h.heartbeat()),
    'heartbeat(t)': count(() => q.h.heartbeat(T0)),
    'observe(work)': count(() => q.h.observe({ type: 'stream_event' })),
    'observe(ignored)': count(() => q.h.observe({ type: 'assistant' })),
    'observe(result)': count(() => q.h.observe({ type: 'result', subtype: 'success' })),
    'observe(m, t)': count(() => q.h.observe({ type: 'stream_event' }, T0)),
    'settle()': count(() => q.h.settle()),
    'tick()': count(() => w.tick()),
    'tick(t)': count(() => w.tick(at(1))),
    'kill': count(() => q.h.kill),
    'unregister()': count(() => q.h.unregister()),
    'monitor.observe(frame)': count(() => m.observe(frame)),
    'monitor.note(info)': count(() => m.note(frame.rate_limit_info)),
    'monitor.active()': count(() => m.active()),
    'monitor.active(t)': count(() => m.active(T0)),
    'monitor.latest()': count(() => m.latest()),
    'close()': count(() => w.close()),
  };
  assert.deepEqual(readsOf, {
    'register()': 1,
    'register(r, t)': 0,
    'activity()': 1,
    'activity(n, t)': 0,
    'stream()': 1,
    'stream(t)': 0,
    'heartbeat()': 1,
    'heartbeat(t)': 0,
    'observe(work)': 1,
    'observe(ignored)': 1,
    'observe(result)': 1,
    'observe(m, t)': 0,
    'settle()': 0,
    'tick()': 1,
    'tick(t)': 0,
    'kill': 0,
    'unregister()': 0,
    'monitor.observe(frame)': 0,
    'monitor.note(info)': 0,
    'monitor.active()': 1,
    'monitor.active(t)': 0,
    'monitor.latest()': 0,
    'close()': 0,
  });
});

test('every call given its time or reading it from the clock: the same verdicts', () => {
  // One scenario, each of its five timed calls either given its instant or reading it from a
  // virtual clock set there: 32 runs, one outcome.
  const outcomes = new Set();
  for (let mask = 0; mask < 32; mask++) {
    const clock = { t: T0 };
    const w = createWatchdog({ now: () => clock.t });
    const given = (bit, when) => {
      clock.t = when;
      return mask & (1 << bit) ? [when] : [];
    };
    const q = lane(w, ...given(0, T0));
    q.h.activity('Write', ...given(1, at(1)));
    q.h.observe({ type: 'stream_event' }, ...given(2, at(5)));
    q.h.heartbeat(...given(3, at(6)));
    const early = w.tick(...given(4, at(15.9)));
    const late = w.tick(at(16));
    outcomes.add(JSON.stringify({ early, late, kill: q.h.kill }));
    w.close();
  }
  assert.deepEqual([...outcomes], [
    JSON.stringify({
      early: [],
      late: [{ kind: 'watchdog_idle', elapsedMs: 16 * MIN, sinceToolMs: 15 * MIN }],
      kill: { kind: 'watchdog_idle', elapsedMs: 16 * MIN, sinceToolMs: 15 * MIN },
    }),
  ]);
});

test('a feed on the default clock among given times counts where that clock is, as in the reference', () => {
  // heartbeat() reads Date.now, far after T0: the idle clock never reaches a check at T0 + x
  // (its idle time is negative), and the ceiling still counts from T0.
  const w = createWatchdog();
  const q = lane(w, T0);
  q.h.activity('Write', T0);
  q.h.heartbeat();
  assert.deepEqual(w.tick(at(30)), []);
  assert.deepEqual(w.tick(at(70)), [{ kind: 'hard_ceiling', elapsedMs: 70 * MIN, sinceToolMs: 70 * MIN }]);
  w.close();
});

test('an instant earlier than the last counts where it is: feeds, registrations and checks', () => {
  const w = createWatchdog({ now: () => T0 });
  // A frame dated before the previous one is the last sign of life (the reference assigns).
  const back = lane(w, T0);
  back.h.activity('Write', T0);
  back.h.stream(at(20));
  back.h.stream(at(5));
  // The last sign of life before the last tool boundary: idle counts from the boundary.
  const tool = lane(w, T0);
  tool.h.activity('Write', at(10));
  tool.h.stream(at(2));
  assert.deepEqual(w.tick(at(15)).map((k) => k.kind), ['watchdog_idle']);
  assert.equal(back.h.kill.elapsedMs, 15 * MIN);
  assert.equal(tool.h.kill, null);
  // A query registered after that check, dated before it, counts from its own date.
  const late = lane(w, at(1));
  late.h.activity('Write', at(1));
  assert.deepEqual(w.tick(at(11)).map((k) => k.kind), ['watchdog_idle']);
  assert.deepEqual(late.h.kill, { kind: 'watchdog_idle', elapsedMs: 10 * MIN, sinceToolMs: 10 * MIN });
  assert.equal(tool.h.kill, null, 'a check before the last is the check at its own instant');
  assert.deepEqual(w.tick(at(20)).map((k) => k.sinceToolMs), [10 * MIN]);
  w.close();
});

test('a late check names the kill as the reference does: the ceiling first, no extension with a kill', () => {
  const util = { u: null };
  const w = createWatchdog({ now: () => T0, getUtilization: () => util.u });
  // Pre-write, never heard from: its idle kill fell due at 20, its ceiling at 70.
  const silent = lane(w, T0);
  // Written at T0, high utilization: its extension fell due at 10, its kill at 20.
  const busy = lane(w, T0);
  busy.h.activity('Write', T0);
  util.u = 0.95;
  assert.deepEqual(w.tick(at(25)), [
    { kind: 'watchdog_idle', elapsedMs: 25 * MIN, sinceToolMs: 25 * MIN },
    { kind: 'watchdog_idle', elapsedMs: 25 * MIN, sinceToolMs: 25 * MIN },
  ]);
  assert.deepEqual([silent.extends, busy.extends], [[], []]);
  const old = lane(w, T0);
  assert.deepEqual(w.tick(at(75)), [{ kind: 'hard_ceiling', elapsedMs: 75 * MIN, sinceToolMs: 75 * MIN }]);
  assert.deepEqual(old.extends, []);
  w.close();
});

test('a utilization read at a check before the last applies at that check', () => {
  const util = { u: 0.95 };
  const w = createWatchdog({ now: () => T0, getUtilization: () => util.u });
  const q = lane(w, T0);
  q.h.activity('Write', T0);
  assert.deepEqual(w.tick(at(12)), []);
  assert.deepEqual(q.extends, [['high_utilization', 0.95]]);
  util.u = 0.3;
  assert.deepEqual(w.tick(at(11)), [{ kind: 'watchdog_idle', elapsedMs: 11 * MIN, sinceToolMs: 11 * MIN }]);
  w.close();
});

test('the timer counts from the caller\'s own instants, never from a clock it was not given', async () => {
  // Given T0 on the default clock (Date.now, far later): the reference's timer would check
  // tickMs (here 400 ms) later; ours comes at the query's own deadline, 200 ms after T0
  // (nothing earlier, as reading Date.now against T0 would).
  const w = createWatchdog({ idleMs: 200, extendFactor: 1, tickMs: 400 });
  const t = performance.now();
  const q = lane(w, T0);
  const hold = setTimeout(() => {}, 5_000);
  await new Promise((done) => q.ac.signal.addEventListener('abort', done));
  clearTimeout(hold);
  const waited = performance.now() - t;
  assert.ok(waited >= 190, `checked ${waited} ms after the registration, before its 200 ms deadline`);
  w.close();
});

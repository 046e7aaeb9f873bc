// createRateLimitMonitor & the formatters against the INSTALLED package: the reference merge rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  createRateLimitMonitor,
  formatRateLimitReading,
  RATE_LIMIT_DEFAULTS,
  rateLimitResetIso,
} from 'agent-sdk-watchdog';

const RESET = 1_900_003_600;
const ALLOWED = {
  status: 'allowed',
  resetsAt: RESET,
  rateLimitType: 'five_hour',
  overageStatus: 'rejected',
  overageDisabledReason: 'out_of_credits',
  isUsingOverage: false,
  unifiedWindows: {
    five_hour: { utilization: 0.11, resetsAt: RESET },
    seven_day: { utilization: 0.06, resetsAt: RESET + 86_400 },
  },
};
const WARNING_99 = { status: 'allowed_warning', resetsAt: RESET, rateLimitType: 'five_hour', utilization: 0.99 };

test('defaults and the warnAt RangeError', () => {
  assert.equal(RATE_LIMIT_DEFAULTS.warnAt, 0.85);
  assert.equal(RATE_LIMIT_DEFAULTS.fallbackWindow, 'five_hour');
  assert.ok(Object.isFrozen(RATE_LIMIT_DEFAULTS));
  for (const [v, text] of [[1.5, '1.5'], [-0.1, '-0.1'], [NaN, 'NaN']]) {
    assert.throws(() => createRateLimitMonitor({ warnAt: v }),
      (e) => e instanceof RangeError && e.message === `warnAt must be a number in [0, 1], got ${text}`);
  }
  const m = createRateLimitMonitor({ warnAt: undefined });
  assert.ok(m.note({ status: 'allowed_warning', utilization: 0.85 })); // inclusive
});

test('the merge: window utilization, top level wins, overage carries forward, input untouched', () => {
  const m = createRateLimitMonitor();
  const before = structuredClone(ALLOWED);
  assert.equal(m.note(ALLOWED), null); // 0.11: no warning
  assert.deepEqual(ALLOWED, before);
  assert.equal(m.latest().utilization, 0.11);
  assert.equal(m.latest().overageStatus, 'rejected');
  assert.deepEqual(m.latest().unifiedWindows, ALLOWED.unifiedWindows); // a shallow copy keeps every field
  const warned = m.note(WARNING_99);
  assert.equal(warned, m.latest());
  assert.equal(warned.utilization, 0.99);
  assert.equal(warned.overageStatus, 'rejected');
  assert.equal(warned.overageDisabledReason, 'out_of_credits');
  assert.equal(warned.unifiedWindows, undefined); // nothing else carries
  assert.equal(m.note(WARNING_99), null); // once
  // A null overageStatus does not carry; a named window missing from the map falls back.
  const r = m.note({ status: 'rejected', overageStatus: null, rateLimitType: 'opus',
    unifiedWindows: { five_hour: { utilization: 0.5 } } });
  assert.equal(r, null);
  assert.equal(m.latest().overageStatus, null);
  assert.equal(m.latest().utilization, 0.5);
  m.reset();
  assert.equal(m.latest(), null);
  assert.ok(m.note(WARNING_99)); // re-armed
});

test('fallbackWindow and warnAt options', () => {
  const bare = { status: 'allowed', unifiedWindows: { five_hour: { utilization: 0.1 }, seven_day: { utilization: 0.7 } } };
  const seven = createRateLimitMonitor({ fallbackWindow: 'seven_day' });
  seven.note(bare);
  assert.equal(seven.latest().utilization, 0.7);
  const def = createRateLimitMonitor();
  def.note(bare);
  assert.equal(def.latest().utilization, 0.1);
  assert.ok(createRateLimitMonitor({ warnAt: 0.5 }).note({ status: 'allowed_warning', utilization: 0.6 }));
  assert.equal(createRateLimitMonitor().note({ status: 'allowed_warning', utilization: 0.6 }), null);
});

test('active(): stale at the reset instant, latest() still shows it; injected clock', () => {
  let clock = 0;
  const m = createRateLimitMonitor({ now: () => clock });
  assert.equal(m.active(), null);
  m.note(ALLOWED);
  clock = RESET * 1000 - 1;
  assert.ok(m.active());
  clock = RESET * 1000;
  assert.equal(m.active(), null);
  assert.equal(m.active(RESET * 1000 + 1), null);
  assert.equal(m.latest().status, 'allowed');
  const n = createRateLimitMonitor();
  n.note({ status: 'allowed_warning', utilization: 0.2 });
  assert.ok(n.active(Number.MAX_SAFE_INTEGER)); // no resetsAt: never stale
});

test('observe(): only rate_limit_event, and monitors are independent', () => {
  const a = createRateLimitMonitor();
  const b = createRateLimitMonitor();
  assert.equal(a.observe({ type: 'assistant' }), null);
  assert.equal(a.latest(), null);
  const r = a.observe({ type: 'rate_limit_event', rate_limit_info: { status: 'allowed_warning', utilization: 0.9 } });
  assert.equal(r.utilization, 0.9);
  assert.equal(b.latest(), null);
  assert.ok(b.observe({ type: 'rate_limit_event', rate_limit_info: { status: 'allowed_warning', utilization: 0.9 } }));
  assert.throws(() => a.observe({ type: 'rate_limit_event' }), TypeError);
});

test('formatRateLimitReading and rateLimitResetIso: the golden lines', () => {
  const cases = [
    [{ status: 'allowed_warning', utilization: 0.99, overageStatus: 'rejected', overageDisabledReason: 'out_of_credits', resetsAt: RESET },
      'allowed_warning at 99%, overage rejected (out_of_credits), resets at 2030-03-17T18:46:40.000Z'],
    [{ status: 'allowed' }, 'allowed'],
    [{ status: 'rejected', overageStatus: 'rejected' }, 'rejected, overage rejected'],
    [{ status: 'allowed', overageDisabledReason: 'out_of_credits' }, 'allowed (out_of_credits)'],
    [{ status: 'allowed', utilization: 0 }, 'allowed at 0%'],
    [{ status: 'allowed', utilization: null }, 'allowed at 0%'],
    [{ status: 'allowed', resetsAt: 0 }, 'allowed, resets at 1970-01-01T00:00:00.000Z'],
    [{ status: 'allowed', resetsAt: 1.5 }, 'allowed, resets at 1970-01-01T00:00:01.500Z'],
    [{ status: 'allowed', utilization: 1.234 }, 'allowed at 123%'],
    [{ status: 'allowed', utilization: 0.125 }, 'allowed at 13%'], // ties round up, as JS does
  ];
  for (const [reading, line] of cases) assert.equal(formatRateLimitReading(reading), line);
  assert.equal(rateLimitResetIso({ status: 'allowed' }), null);
  assert.throws(() => rateLimitResetIso({ status: 'allowed', resetsAt: NaN }), RangeError);
});

test('formatRateLimitReading on values the SDK never sends: what JavaScript itself prints', () => {
  const cases = [
    [{}, 'undefined'],
    [{ status: 'allowed', utilization: -0.2 }, 'allowed at -20%'],
    [{ status: 'allowed', utilization: -0.00001 }, 'allowed at -0%'],
    [{ status: 'allowed', utilization: '0.5' }, 'allowed at 50%'],
    [{ status: 'allowed', utilization: NaN }, 'allowed at NaN%'],
    [{ status: 'allowed', overageStatus: 5, overageDisabledReason: '' }, 'allowed, overage 5'],
    [{ status: 'allowed', resetsAt: -1.5 }, 'allowed, resets at 1969-12-31T23:59:58.500Z'],
    [{ status: 'allowed', resetsAt: 253_402_300_800 }, 'allowed, resets at +010000-01-01T00:00:00.000Z'],
    [{ status: 'allowed', resetsAt: '1900003600' }, 'allowed'], // not a number: no reset
  ];
  for (const [reading, line] of cases) assert.equal(formatRateLimitReading(reading), line);
  for (const resetsAt of [Infinity, -Infinity, 9e12, -9e12]) {
    const reading = { status: 'allowed', resetsAt };
    assert.throws(() => rateLimitResetIso(reading), { name: 'RangeError', message: 'Invalid time value' });
    assert.throws(() => formatRateLimitReading(reading), { name: 'RangeError', message: 'Invalid time value' });
  }
  assert.equal(rateLimitResetIso({ resetsAt: 8.64e12 }), '+275760-09-13T00:00:00.000Z');
});

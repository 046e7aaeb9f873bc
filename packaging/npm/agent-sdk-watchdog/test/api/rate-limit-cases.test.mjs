// createRateLimitMonitor() on the shared merge cases (testdata/rate-limit-cases.json, which
// crates/core/tests/rate_limit.rs checks against the core): the installed API's readings are
// the core's, with the reference's one-shot warning.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRateLimitMonitor } from 'agent-sdk-watchdog';

// scripts/test-node-api copies the file beside this test; a missing file fails here.
const { cases } = JSON.parse(readFileSync(new URL('./rate-limit-cases.json', import.meta.url), 'utf8'));
const DERIVED = ['utilization', 'overageStatus', 'overageDisabledReason'];

test('the shared file holds the cases', () => {
  assert.ok(cases.length >= 10, `${cases.length} cases`);
});

for (const c of cases) {
  test(c.name, () => {
    let clock = 0;
    const m = createRateLimitMonitor({ warnAt: c.warnAt, fallbackWindow: c.fallbackWindow, now: () => clock });
    for (const step of c.steps) {
      if (step.reset) {
        m.reset();
        assert.equal(m.latest(), null);
      } else if (step.active !== undefined) {
        assert.equal(m.active(step.active) !== null, step.is, `active(${step.active})`);
      } else {
        clock = step.now;
        const before = structuredClone(step.note);
        const warned = m.note(step.note);
        assert.deepEqual(step.note, before, 'the frame is not mutated');
        const r = m.latest();
        assert.equal(warned, step.warns ? r : null, `warns: ${step.warns}`);
        for (const key of DERIVED) assert.equal(r[key], step.reading[key], key);
        // Every other field is the frame's own (a shallow copy), and nothing else is added.
        for (const [key, value] of Object.entries(step.note)) {
          if (!DERIVED.includes(key)) assert.equal(r[key], value, key);
        }
        const extra = Object.keys(r).filter((k) => !(k in step.note) && step.reading[k] === undefined);
        assert.deepEqual(extra, [], 'no field the frame did not give');
      }
    }
  });
}

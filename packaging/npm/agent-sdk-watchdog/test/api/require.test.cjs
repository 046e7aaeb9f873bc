// require('agent-sdk-watchdog') from CommonJS gets the same module as import: the reference API
// and the binary helpers.
const { test } = require('node:test');
const assert = require('node:assert/strict');

test('CommonJS require gives the reference API and the helpers, the same objects as import', async () => {
  const cjs = require('agent-sdk-watchdog');
  for (const name of [
    'createWatchdog', 'evaluateWatchdog', 'makeWatchdogHook', 'createRateLimitMonitor',
    'formatRateLimitReading', 'rateLimitResetIso', 'installSdkWarningFilter',
    'watchdogOptions', 'watchdogEnv', 'binaryPath', 'platformPackage',
  ]) {
    assert.equal(typeof cjs[name], 'function', name);
  }
  const esm = await import('agent-sdk-watchdog');
  assert.equal(cjs.createWatchdog, esm.createWatchdog);
  assert.equal(cjs.WATCHDOG_DEFAULTS, esm.WATCHDOG_DEFAULTS);
  const w = cjs.createWatchdog({ now: () => 0 });
  const h = w.register({ hardCeilingMs: 10, abortController: new AbortController() });
  assert.equal(w.tick(10)[0].kind, 'hard_ceiling');
  assert.equal(h.kill.kind, 'hard_ceiling');
  w.close();
});

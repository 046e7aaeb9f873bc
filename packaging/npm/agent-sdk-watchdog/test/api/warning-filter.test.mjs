// installSdkWarningFilter against the INSTALLED package, in child processes: it patches the real
// process.emitWarning, and Node's own printer writes to the child's stderr.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { SHADOWED_CODE, WARNING_FILTER_DEFAULTS } from 'agent-sdk-watchdog';

function child(script) {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('the defaults', () => {
  assert.equal(SHADOWED_CODE, 'CLAUDE_SDK_CAN_USE_TOOL_SHADOWED');
  assert.deepEqual([...WARNING_FILTER_DEFAULTS.codes], [SHADOWED_CODE]);
  assert.ok(Object.isFrozen(WARNING_FILTER_DEFAULTS) && Object.isFrozen(WARNING_FILTER_DEFAULTS.codes));
});

test('one onFirst per code, swallowed on both signatures, others untouched, installed once', () => {
  const r = child(`
    import { installSdkWarningFilter, SHADOWED_CODE } from 'agent-sdk-watchdog';
    const first = installSdkWarningFilter({ onFirst: (w, code) => console.log('FIRST', code, String(w)) });
    const wrapper = process.emitWarning;
    const second = installSdkWarningFilter({ onFirst: () => console.log('SECOND RAN') });
    console.log('INSTALLS', first, second, process.emitWarning === wrapper);
    process.emitWarning('shadowed text one', { code: SHADOWED_CODE });
    process.emitWarning('shadowed text two', 'Warning', SHADOWED_CODE);
    process.emitWarning('another warning', { code: 'OTHER_CODE' });
  `);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.match(/^FIRST /gm)?.length, 1);
  assert.match(r.stdout, /^FIRST CLAUDE_SDK_CAN_USE_TOOL_SHADOWED shadowed text one$/m);
  assert.match(r.stdout, /^INSTALLS true false true$/m);
  assert.doesNotMatch(r.stdout, /SECOND RAN/);
  assert.doesNotMatch(r.stderr, /shadowed text/);
  assert.match(r.stderr, /\(node:\d+\) \[OTHER_CODE\] Warning: another warning/);
  assert.equal(r.stderr.match(/another warning/g).length, 1);
  assert.match(r.stderr, /--trace-warnings/);
});

test('custom codes: once per code in order, a throwing onFirst is dropped, unlisted codes print', () => {
  const r = child(`
    import { installSdkWarningFilter, SHADOWED_CODE } from 'agent-sdk-watchdog';
    installSdkWarningFilter({ codes: ['PC_A', 'PC_B'], onFirst: (_w, code) => { console.log('FIRST', code); throw new Error('x'); } });
    process.emitWarning('a1', { code: 'PC_A' });
    process.emitWarning('b1', 'Warning', 'PC_B');
    process.emitWarning('a2', 'Warning', 'PC_A');
    process.emitWarning('b2', { code: 'PC_B' });
    process.emitWarning('shadowed now printed', { code: SHADOWED_CODE });
    console.log('DONE');
  `);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split('\n'), ['FIRST PC_A', 'FIRST PC_B', 'DONE']);
  assert.doesNotMatch(r.stderr, /\b[ab][12]\b/);
  assert.match(r.stderr, /\[CLAUDE_SDK_CAN_USE_TOOL_SHADOWED\] Warning: shadowed now printed/);
});

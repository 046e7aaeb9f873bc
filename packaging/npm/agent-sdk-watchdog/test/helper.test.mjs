// The installed npm packages, run by scripts/test-packages from a fresh project that installed
// the packed tarballs (node:test, no other dependency). Not shipped in the package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { binaryPath, watchdogEnv, watchdogOptions, platformPackage } from 'agent-sdk-watchdog';

const project = process.cwd();
const binDir = path.join(project, 'node_modules', '.bin');
const require = createRequire(path.join(project, 'package.json'));

function fakeClaude(dir, body) {
  const p = path.join(dir, 'claude');
  fs.writeFileSync(p, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return p;
}

test('binaryPath is the native binary of the installed platform package', () => {
  const pkgDir = path.dirname(require.resolve(`${platformPackage()}/package.json`));
  for (const name of ['claude-watchdog', 'agent-watchdog']) {
    const p = binaryPath(name);
    assert.equal(p, path.join(pkgDir, 'bin', name));
    fs.accessSync(p, fs.constants.X_OK);
  }
  assert.equal(platformPackage('linux', 'x64'), '@agent-sdk-watchdog/linux-x64');
  assert.throws(() => binaryPath('claude'), TypeError);
});

test('watchdogEnv maps every field to its variable and refuses bad input', () => {
  assert.deepEqual(
    watchdogEnv({
      idle: '5m', noProgress: 90, startup: '2m', linger: 1.5, ceiling: '2h', grace: 0,
      extendFactor: 1, highUtilization: 0.95, warnAt: 0.5, writeTools: ['Write', 'Bash'],
      record: '/tmp/r.capture.jsonl', summary: '/tmp/s.json', claude: '/opt/claude',
    }),
    {
      AGENT_WATCHDOG_IDLE: '5m', AGENT_WATCHDOG_NO_PROGRESS: '90', AGENT_WATCHDOG_STARTUP: '2m',
      AGENT_WATCHDOG_LINGER: '1.5', AGENT_WATCHDOG_CEILING: '2h', AGENT_WATCHDOG_GRACE: '0',
      AGENT_WATCHDOG_EXTEND_FACTOR: '1', AGENT_WATCHDOG_HIGH_UTILIZATION: '0.95',
      AGENT_WATCHDOG_WARN_AT: '0.5', AGENT_WATCHDOG_WRITE_TOOLS: 'Write,Bash',
      AGENT_WATCHDOG_RECORD: '/tmp/r.capture.jsonl', AGENT_WATCHDOG_SUMMARY: '/tmp/s.json',
      AGENT_WATCHDOG_CLAUDE: '/opt/claude',
    },
  );
  assert.deepEqual(watchdogEnv(), {});
  for (const bad of [
    { idle: 0 }, { idle: -1 }, { idle: '' }, { idle: Infinity }, { idle: true }, { grace: -1 },
    { extendFactor: '2' }, { writeTools: 'Write' }, { writeTools: ['Write,Edit'] }, { idel: '5m' },
  ]) {
    assert.throws(() => watchdogEnv(bad), (e) => e instanceof TypeError || e instanceof RangeError, JSON.stringify(bad));
  }
});

test('watchdogOptions keeps the environment (the TS SDK replaces it) and adds the policy', () => {
  const o = watchdogOptions({ idle: '4s' }, { PATH: '/usr/bin', AGENT_WATCHDOG_IDLE: '1h' });
  assert.deepEqual(Object.keys(o).sort(), ['env', 'pathToClaudeCodeExecutable']);
  assert.equal(o.pathToClaudeCodeExecutable, binaryPath('claude-watchdog'));
  assert.deepEqual(o.env, { PATH: '/usr/bin', AGENT_WATCHDOG_IDLE: '4s' });
  assert.equal(watchdogOptions().env.PATH, process.env.PATH);
});

test('the bin launchers run the binaries and end with their exit code', () => {
  const help = spawnSync(path.join(binDir, 'agent-watchdog'), ['--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /replay/);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'aw-npm-'));
  const env = {
    PATH: process.env.PATH, HOME: tmp,
    ...watchdogEnv({ claude: fakeClaude(tmp, 'echo \'{"type":"result","subtype":"success","is_error":false,"result":"ok"}\''), highUtilization: 0.95, grace: 0 }),
  };
  const ok = spawnSync(path.join(binDir, 'claude-watchdog'), ['-p', 'hi'], { env, encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /"subtype":"success"/);
  const bad = spawnSync(path.join(binDir, 'claude-watchdog'), ['-p', 'hi'], {
    env: { ...env, ...watchdogEnv({ highUtilization: 1.5 }) }, encoding: 'utf8',
  });
  assert.equal(bad.status, 2, 'a usage error is exit code 2 through the launcher');
  assert.match(bad.stderr, /--high-utilization/);
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('SIGTERM to a launcher reaches the watchdog, which stops claude: nothing is left', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'aw-npm-'));
  const pidFile = path.join(tmp, 'claude.pid');
  const claude = fakeClaude(tmp, `echo $$ > ${pidFile}\necho '{"type":"system","subtype":"init"}'\nexec sleep 300`);
  const child = spawn(path.join(binDir, 'claude-watchdog'), ['-p', 'hi'], {
    env: { PATH: process.env.PATH, HOME: tmp, ...watchdogEnv({ claude, grace: '2s' }) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  // The first line means the whole chain (launcher, watchdog, claude) is up.
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve);
    child.once('exit', () => reject(new Error('exited before its first line')));
  });
  const claudePid = Number(fs.readFileSync(pidFile, 'utf8'));
  assert.ok(fs.existsSync(`/proc/${claudePid}`), 'claude runs');
  const t0 = Date.now();
  child.kill('SIGTERM');
  const [code, signal] = await new Promise((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  assert.ok(Date.now() - t0 < 15000, 'the launcher ended within the grace and a margin');
  assert.ok(code !== 0 || signal !== null, `ended by the signal, not as a success (code ${code}, signal ${signal})`);
  // The watchdog reaps claude before it exits, so it is gone by now.
  const state = fs.existsSync(`/proc/${claudePid}/stat`) ? fs.readFileSync(`/proc/${claudePid}/stat`, 'utf8') : '';
  assert.ok(state === '' || / Z /.test(state), `claude (${claudePid}) is still running: ${state}`);
  fs.rmSync(tmp, { recursive: true, force: true });
});

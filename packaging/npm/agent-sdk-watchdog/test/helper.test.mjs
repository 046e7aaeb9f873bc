// The installed npm packages, run by scripts/test-packages from a fresh project that installed
// the packed tarballs (node:test, no other dependency). Not shipped in the package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import {
  binaryPath, watchdogEnv, watchdogOptions, platformPackage, pluginPath, sdkClaude, sdkPlatformPackages, watchdogKill,
} from 'agent-sdk-watchdog';

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

test('where no package of binaries fits, the launchers say in one line what is missing and what works', () => {
  const launcher = path.join(project, 'node_modules', 'agent-sdk-watchdog', 'bin', 'claude-watchdog.js');
  for (const [platform, arch, missing] of [
    ['darwin', 'arm64', 'agent-sdk-watchdog has no claude-watchdog for darwin-arm64 (its binaries are built for linux-x64, linux-arm64 and win32-x64)'],
    ['win32', 'arm64', 'agent-sdk-watchdog has no claude-watchdog for win32-arm64'],
    // Windows x64 has one: not installed here (the test project is a Linux one).
    ['win32', 'x64', 'the optional dependency holding claude-watchdog for win32-x64'],
    // A platform that has one, not installed here (as with --omit=optional).
    ['linux', process.arch === 'arm64' ? 'x64' : 'arm64', 'the optional dependency holding claude-watchdog for linux-'],
  ]) {
    const code = `Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} });
      Object.defineProperty(process, 'arch', { value: ${JSON.stringify(arch)} });
      require(${JSON.stringify(launcher)});`;
    const r = spawnSync(process.execPath, ['-e', code, '--', '--version'], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.ok(lines[0].includes(missing), lines[0]);
    assert.ok(lines[0].endsWith('the in-process API (createWatchdog & co.) works without it'), lines[0]);
    assert.doesNotMatch(lines[0], /reinstall/i);
  }
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

// The SDK's own claude, found independently of the helper: the platform package npm installed.
const bundled = path.join(project, 'node_modules', '@anthropic-ai', 'claude-agent-sdk-linux-x64', 'claude');

test('watchdogOptions keeps the environment (the TS SDK replaces it) and adds the policy', () => {
  const o = watchdogOptions({ idle: '4s', plugin: false }, { PATH: '/usr/bin', AGENT_WATCHDOG_IDLE: '1h' });
  assert.deepEqual(Object.keys(o).sort(), ['env', 'mcpServersDelivery', 'pathToClaudeCodeExecutable', 'plugins']);
  assert.equal(o.pathToClaudeCodeExecutable, binaryPath('claude-watchdog'));
  assert.deepEqual(o.env, { PATH: '/usr/bin', AGENT_WATCHDOG_IDLE: '4s', AGENT_WATCHDOG_CLAUDE: bundled });
  assert.equal(watchdogOptions().env.PATH, process.env.PATH);
  assert.throws(() => watchdogOptions({ idel: '5m' }), TypeError);
});

test('the SDK platform packages are tried in the SDK order for the OS, CPU and libc', () => {
  const sdk = '@anthropic-ai/claude-agent-sdk';
  assert.deepEqual(sdkPlatformPackages('linux', 'x64', false), [`${sdk}-linux-x64`, `${sdk}-linux-x64-musl`]);
  assert.deepEqual(sdkPlatformPackages('linux', 'arm64', true), [`${sdk}-linux-arm64-musl`, `${sdk}-linux-arm64`]);
  assert.deepEqual(sdkPlatformPackages('darwin', 'arm64', false), [`${sdk}-darwin-arm64`]);
  assert.deepEqual(sdkPlatformPackages('win32', 'x64', false), [`${sdk}-win32-x64`]);
});

test("the claude is the SDK's own, even with another claude first on PATH", () => {
  fs.accessSync(bundled, fs.constants.X_OK);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'aw-npm-'));
  const fake = fakeClaude(tmp, 'echo "1.0.0 (Claude Code)"');
  const env = { PATH: `${tmp}:${process.env.PATH}` };
  assert.deepEqual(sdkClaude({ env }), { path: bundled, bundled: true });
  const o = watchdogOptions({}, env);
  assert.equal(o.env.AGENT_WATCHDOG_CLAUDE, bundled);
  assert.equal(o.mcpServersDelivery, 'initialize');
  // Resolved from this package when the working directory is elsewhere.
  assert.deepEqual(sdkClaude({ from: tmp, env }), { path: bundled, bundled: true });
  // Its version is the one the SDK was released with.
  const sdkJson = JSON.parse(fs.readFileSync(path.join(project, 'node_modules/@anthropic-ai/claude-agent-sdk/package.json'), 'utf8'));
  const v = spawnSync(bundled, ['--version'], { encoding: 'utf8' });
  assert.equal(v.stdout.split(' ')[0], sdkJson.claudeCodeVersion);
  assert.notEqual(spawnSync(fake, [], { encoding: 'utf8' }).stdout.trim(), v.stdout.trim());
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('an explicit claude wins, and then MCP delivery is left to the caller', () => {
  let o = watchdogOptions({ claude: '/opt/claude' }, { PATH: '/usr/bin' });
  assert.equal(o.env.AGENT_WATCHDOG_CLAUDE, '/opt/claude');
  assert.equal(o.mcpServersDelivery, undefined);
  o = watchdogOptions({}, { PATH: '/usr/bin', AGENT_WATCHDOG_CLAUDE: '/opt/mine' });
  assert.equal(o.env.AGENT_WATCHDOG_CLAUDE, '/opt/mine');
  assert.equal(o.mcpServersDelivery, undefined);
  // The caller's own setting wins when spread after.
  assert.equal({ ...watchdogOptions(), mcpServersDelivery: 'argv' }.mcpServersDelivery, 'argv');
});

test('without the SDK it falls back to PATH, and with nothing it says what it looked for where', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'aw-npm-'));
  const bin = path.join(tmp, 'bin');
  fs.mkdirSync(bin);
  const fake = fakeClaude(bin, 'exit 0');
  // A copy of the helper outside any node_modules, run from a directory without the SDK.
  const lone = path.join(tmp, 'lone.cjs');
  // index.js itself (the package's `exports` entry is the ES module of the in-process API).
  const helper = path.join(path.dirname(require.resolve('agent-sdk-watchdog/package.json')), 'index.js');
  fs.copyFileSync(helper, lone);
  const run = (PATH) => spawnSync(process.execPath, ['-e', `
    try { process.stdout.write(JSON.stringify(require(${JSON.stringify(lone)}).sdkClaude({ env: { PATH: ${JSON.stringify(PATH)} } }))) }
    catch (e) { process.stdout.write(JSON.stringify({ error: e.message })) }`], { cwd: tmp, encoding: 'utf8' });
  assert.deepEqual(JSON.parse(run(bin).stdout), { path: fake, bundled: false });
  const { error } = JSON.parse(run(path.join(tmp, 'nowhere')).stdout);
  assert.match(error, /@anthropic-ai\/claude-agent-sdk is not resolvable from/);
  assert.match(error, /@anthropic-ai\/claude-agent-sdk-linux-x64/);
  assert.ok(error.includes(`claude on PATH (${path.join(tmp, 'nowhere')})`), error);
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('the package carries the plugin, on by default with the packaged agent-watchdog for its hooks', () => {
  const dir = pluginPath();
  assert.equal(dir, path.join(project, 'node_modules', 'agent-sdk-watchdog', 'plugin'));
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, '.claude-plugin', 'plugin.json'), 'utf8'));
  assert.equal(manifest.name, 'agent-watchdog-subagents');
  const hooks = JSON.parse(fs.readFileSync(path.join(dir, 'hooks', 'hooks.json'), 'utf8'));
  assert.match(JSON.stringify(hooks), /AGENT_WATCHDOG_BIN/);
  const o = watchdogOptions({}, { PATH: '/usr/bin' });
  assert.deepEqual(o.plugins, [{ type: 'local', path: dir }]);
  assert.equal(o.env.AGENT_WATCHDOG_BIN, binaryPath('agent-watchdog'));
  const mine = { type: 'local', path: '/opt/my-plugin' };
  assert.deepEqual(watchdogOptions({ plugins: [mine] }).plugins, [mine, { type: 'local', path: dir }]);
  assert.equal(watchdogOptions({}, { AGENT_WATCHDOG_BIN: '/opt/aw' }).env.AGENT_WATCHDOG_BIN, '/opt/aw');
  const off = watchdogOptions({ plugin: false }, { PATH: '/usr/bin' });
  assert.deepEqual(off.plugins, []);
  assert.equal(off.env.AGENT_WATCHDOG_BIN, undefined);
  assert.throws(() => watchdogOptions({ plugin: 'no' }), TypeError);
});

const SENTENCE = 'agent-watchdog killed the session (no_progress): keep-alives only for 12s.';
const SYNTHETIC = {
  type: 'result', subtype: 'error_during_execution', is_error: true,
  terminal_reason: 'watchdog_no_progress', result: SENTENCE, session_id: 's',
};

test('watchdogKill reads our synthetic result', () => {
  assert.deepEqual(watchdogKill(SYNTHETIC), { kind: 'no_progress', reason: SENTENCE });
  assert.deepEqual(watchdogKill({ ...SYNTHETIC, terminal_reason: 'watchdog_idle' }), { kind: 'idle', reason: SENTENCE });
});

test('watchdogKill is null for any other message and never throws', () => {
  const { terminal_reason: _, ...noReason } = SYNTHETIC;
  for (const m of [
    { type: 'result', subtype: 'success', is_error: false, result: 'ok', terminal_reason: 'completed' },
    { ...SYNTHETIC, terminal_reason: 'aborted_tools' },
    { ...SYNTHETIC, terminal_reason: null },
    { ...SYNTHETIC, terminal_reason: 'watchdog_' },
    { ...SYNTHETIC, is_error: 'true' },
    { ...SYNTHETIC, subtype: 'success' },
    { ...SYNTHETIC, result: undefined },
    { ...SYNTHETIC, result: ['x'] },
    { ...SYNTHETIC, type: 'assistant' },
    noReason, {}, null, undefined, 'result', 42, [SYNTHETIC],
  ]) {
    assert.equal(watchdogKill(m), null, JSON.stringify(m));
  }
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
  // The helper refuses the value by the drop-in's rule; set by hand, the drop-in refuses it.
  assert.throws(() => watchdogEnv({ highUtilization: 1.5 }), /highUtilization: must be a number in \[0, 1\], got 1.5/);
  const bad = spawnSync(path.join(binDir, 'claude-watchdog'), ['-p', 'hi'], {
    env: { ...env, AGENT_WATCHDOG_HIGH_UTILIZATION: '1.5' }, encoding: 'utf8',
  });
  assert.equal(bad.status, 2, 'a usage error is exit code 2 through the launcher');
  assert.match(bad.stderr, /AGENT_WATCHDOG_HIGH_UTILIZATION|--high-utilization/);
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

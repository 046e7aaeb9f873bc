'use strict';
// agent-sdk-watchdog: the agent-watchdog and claude-watchdog binaries, shipped in one package
// per platform (`@agent-sdk-watchdog/<platform>-<arch>`, an optional dependency that npm
// installs only where it fits), the Claude Code plugin (plugin/), and the query() wiring for
// the TypeScript Agent SDK.

const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');

const SDK = '@anthropic-ai/claude-agent-sdk';

const NAMES = ['claude-watchdog', 'agent-watchdog'];

/** The platforms with a package of binaries (static executables: any libc). */
const BINARY_PLATFORMS = ['linux-x64', 'linux-arm64'];

/** The per-platform package holding the binaries for this platform. */
function platformPackage(platform = process.platform, arch = process.arch) {
  return `@agent-sdk-watchdog/${platform}-${arch}`;
}

/**
 * The path of an installed binary (`claude-watchdog` by default), from the platform package.
 * Throws, in one line, what is missing and what still works (the in-process API) when this
 * platform has no package of binaries or it was not installed.
 */
function binaryPath(name = 'claude-watchdog') {
  if (!NAMES.includes(name)) {
    throw new TypeError(`unknown executable ${JSON.stringify(name)}: expected ${NAMES.join(' or ')}`);
  }
  const pkg = platformPackage();
  const exe = process.platform === 'win32' ? `${name}.exe` : name;
  try {
    return require.resolve(`${pkg}/bin/${exe}`);
  } catch {
    const here = `${process.platform}-${process.arch}`;
    const missing = BINARY_PLATFORMS.includes(here)
      ? `${pkg}, the optional dependency holding ${name} for ${here}, is not installed (optional dependencies were omitted)`
      : `agent-sdk-watchdog has no ${name} for ${here} (its binaries are built for ${BINARY_PLATFORMS.join(' and ')})`;
    throw new Error(`${missing}: the in-process API (createWatchdog & co.) works without it`);
  }
}

/** Whether this is a musl Linux, decided as the SDK decides it (no glibc in the process report). */
function isMusl() {
  if (process.platform !== 'linux') return false;
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
  return report != null && report.header?.glibcVersionRuntime === undefined;
}

/**
 * The SDK's platform packages for a platform, in the order the SDK tries them
 * (`@anthropic-ai/claude-agent-sdk-<os>-<cpu>[-musl]`; on Linux the libc's own first).
 */
function sdkPlatformPackages(platform = process.platform, arch = process.arch, musl = isMusl()) {
  if (platform === 'android') return [`${SDK}-linux-${arch}-android`];
  if (platform === 'linux') {
    return musl ? [`${SDK}-linux-${arch}-musl`, `${SDK}-linux-${arch}`] : [`${SDK}-linux-${arch}`, `${SDK}-linux-${arch}-musl`];
  }
  return [`${SDK}-${platform}-${arch}`];
}

function onPath(exe, env) {
  for (const dir of (env.PATH || '').split(path.delimiter)) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const p = path.join(dir, exe);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      if (fs.statSync(p).isFile()) return p;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * The claude the TypeScript SDK would run without the watchdog, found the way it finds it:
 * the SDK (resolved from `from`, default the working directory, then this package) resolves
 * its platform package's `claude`; else `claude` on `env.PATH`. Returns
 * `{ path, bundled }` (`bundled`: it is the SDK's own). Throws, naming what it looked for and
 * where, when there is none.
 */
function sdkClaude({ from = process.cwd(), env = process.env } = {}) {
  const exe = process.platform === 'win32' ? 'claude.exe' : 'claude';
  const looked = [];
  let sdkEntry = null;
  for (const base of [path.join(path.resolve(from), 'package.json'), __filename]) {
    try {
      sdkEntry = createRequire(base).resolve(SDK);
      break;
    } catch {
      // not resolvable from here
    }
  }
  if (sdkEntry) {
    const sdkRequire = createRequire(sdkEntry);
    for (const pkg of sdkPlatformPackages()) {
      try {
        const p = sdkRequire.resolve(`${pkg}/${exe}`);
        if (fs.existsSync(p)) return { path: p, bundled: true };
      } catch {
        // not installed
      }
      looked.push(`${pkg}/${exe} (from ${path.dirname(sdkEntry)})`);
    }
  } else {
    looked.push(`${SDK} and its platform package (${sdkPlatformPackages().join(' or ')}): ${SDK} is not resolvable from ${path.resolve(from)}`);
  }
  const found = onPath(exe, env);
  if (found) return { path: found, bundled: false };
  looked.push(`${exe} on PATH (${env.PATH || ''})`);
  throw new Error(
    `cannot find the claude the Agent SDK would run: looked for ${looked.join('; ')}. ` +
      `Install ${SDK} with its optional dependencies (it bundles claude), put claude on PATH, ` +
      `or pass { claude: '/path/to/claude' } to watchdogOptions().`,
  );
}

/** The directory of the Claude Code plugin this package carries (subagent continue-once). */
function pluginPath() {
  const dir = path.join(__dirname, 'plugin');
  const manifest = path.join(dir, '.claude-plugin', 'plugin.json');
  if (!fs.existsSync(manifest)) {
    throw new Error(`this installation of agent-sdk-watchdog carries no plugin (no ${manifest}): build it with scripts/build-packages`);
  }
  return dir;
}

/**
 * The watchdog's kill, if `message` is the final result claude-watchdog wrote
 * (`subtype: 'error_during_execution'`, `is_error: true`, `terminal_reason: 'watchdog_<kind>'`):
 * `{ kind, reason }`; `null` for any other message or anything malformed. Never throws.
 */
function watchdogKill(message) {
  if (message === null || typeof message !== 'object') return null;
  const { type, subtype, is_error: isError, terminal_reason: reason, result } = message;
  if (type !== undefined && type !== 'result') return null;
  if (subtype !== 'error_during_execution' || isError !== true) return null;
  if (typeof reason !== 'string' || !reason.startsWith('watchdog_') || reason.length === 'watchdog_'.length) return null;
  if (typeof result !== 'string') return null;
  return { kind: reason.slice('watchdog_'.length), reason: result };
}

function duration(key, value) {
  if (typeof value === 'string') {
    if (value.trim() === '') throw new RangeError(`${key}: empty duration`);
    return value.trim();
  }
  if (typeof value !== 'number') throw new TypeError(`${key}: expected a duration, got ${typeof value}`);
  if (!(value > 0) || !Number.isFinite(value)) {
    throw new RangeError(`${key}: expected a duration > 0, got ${value}`);
  }
  return String(value);
}

function number(key, value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TypeError(`${key}: expected a finite number, got ${String(value)}`);
  }
  return String(value);
}

const DURATIONS = { idle: 'IDLE', noProgress: 'NO_PROGRESS', startup: 'STARTUP', linger: 'LINGER', ceiling: 'CEILING' };
const NUMBERS = { extendFactor: 'EXTEND_FACTOR', highUtilization: 'HIGH_UTILIZATION', warnAt: 'WARN_AT' };
const PATHS = { record: 'RECORD', summary: 'SUMMARY', claude: 'CLAUDE', ledger: 'LEDGER' };
const KEYS = new Set([...Object.keys(DURATIONS), ...Object.keys(NUMBERS), ...Object.keys(PATHS), 'grace', 'writeTools']);

/** The `AGENT_WATCHDOG_*` variables for a policy; unset fields are left out. */
function watchdogEnv(policy = {}) {
  if (policy === null || typeof policy !== 'object') throw new TypeError('policy: expected an object');
  const env = {};
  for (const [key, value] of Object.entries(policy)) {
    if (!KEYS.has(key)) throw new TypeError(`unknown policy field ${JSON.stringify(key)}: expected one of ${[...KEYS].join(', ')}`);
    if (value === undefined || value === null) continue;
    if (key in DURATIONS) env[`AGENT_WATCHDOG_${DURATIONS[key]}`] = duration(key, value);
    else if (key in NUMBERS) env[`AGENT_WATCHDOG_${NUMBERS[key]}`] = number(key, value);
    else if (key in PATHS) {
      if (typeof value !== 'string' || value === '') throw new TypeError(`${key}: expected a path`);
      env[`AGENT_WATCHDOG_${PATHS[key]}`] = value;
    } else if (key === 'grace') {
      // 0 is a valid grace (SIGKILL right after SIGTERM).
      env.AGENT_WATCHDOG_GRACE = value === 0 ? '0' : duration(key, value);
    } else {
      if (!Array.isArray(value)) throw new TypeError('writeTools: expected an array of tool names');
      if (value.some((t) => typeof t !== 'string' || t.trim() === '' || t.includes(','))) {
        throw new RangeError(`writeTools: tool names must be non-empty strings without commas: ${JSON.stringify(value)}`);
      }
      env.AGENT_WATCHDOG_WRITE_TOOLS = value.join(',');
    }
  }
  return env;
}

const OPTION_KEYS = new Set(['plugin', 'plugins', 'from']);

/**
 * query() options that route a session through the watchdog: `pathToClaudeCodeExecutable`
 * (the native claude-watchdog, no node launcher in between); `env` (default `process.env`: the
 * TypeScript SDK replaces the environment with it) with the policy variables over it and
 * `AGENT_WATCHDOG_CLAUDE`, the claude the SDK would have run (`policy.claude` wins, then an
 * `AGENT_WATCHDOG_CLAUDE` already in `env`, then sdkClaude()); `plugins` (`policy.plugins`,
 * plus this package's plugin unless `policy.plugin === false`); and, when the real claude is
 * the SDK's own, `mcpServersDelivery: 'initialize'` (MCP servers go on stdin, not on the
 * command line). Spread it first so your own options win.
 */
function watchdogOptions(policy = {}, env = process.env) {
  if (policy === null || typeof policy !== 'object') throw new TypeError('policy: expected an object');
  const rules = {};
  for (const [k, v] of Object.entries(policy)) if (!OPTION_KEYS.has(k)) rules[k] = v;
  const { plugin = true, plugins = [], from } = policy;
  if (typeof plugin !== 'boolean') throw new TypeError('plugin: expected a boolean');
  if (!Array.isArray(plugins)) throw new TypeError("plugins: expected an array of { type: 'local', path }");
  const out = { ...env, ...watchdogEnv(rules) };
  const options = { pathToClaudeCodeExecutable: binaryPath('claude-watchdog'), env: out };
  if (!out.AGENT_WATCHDOG_CLAUDE) {
    const found = sdkClaude({ from, env: out });
    out.AGENT_WATCHDOG_CLAUDE = found.path;
    if (found.bundled) options.mcpServersDelivery = 'initialize';
  }
  options.plugins = [...plugins];
  if (plugin) {
    options.plugins.push({ type: 'local', path: pluginPath() });
    if (!out.AGENT_WATCHDOG_BIN) out.AGENT_WATCHDOG_BIN = binaryPath('agent-watchdog');
  }
  return options;
}

/**
 * Runs a binary with this process's arguments and stdio, and ends like it (same exit code, or
 * same signal). SIGTERM and SIGHUP are passed on; SIGINT too unless stdin is a terminal (there
 * the terminal already sends it to the whole foreground group, and a second one would escalate).
 */
function launch(name) {
  let bin;
  try {
    bin = binaryPath(name);
  } catch (e) {
    process.stderr.write(`${name}: ${e.message}\n`);
    process.exit(1);
  }
  // Loaded here: only the launchers run a child, and an import should not pay for it.
  const { spawn } = require('node:child_process');
  const child = spawn(bin, process.argv.slice(2), { stdio: 'inherit' });
  const signals = ['SIGTERM', 'SIGHUP', 'SIGINT', 'SIGQUIT'];
  const forward = (sig) => () => {
    if ((sig === 'SIGINT' || sig === 'SIGQUIT') && process.stdin.isTTY) return;
    try {
      child.kill(sig);
    } catch {
      // already gone
    }
  };
  for (const sig of signals) process.on(sig, forward(sig));
  child.on('error', (e) => {
    process.stderr.write(`${name}: cannot run ${bin}: ${e.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      for (const sig of signals) process.removeAllListeners(sig);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}

module.exports = {
  BINARY_PLATFORMS,
  binaryPath,
  platformPackage,
  pluginPath,
  sdkClaude,
  sdkPlatformPackages,
  watchdogEnv,
  watchdogKill,
  watchdogOptions,
  launch,
};

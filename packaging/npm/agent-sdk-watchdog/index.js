'use strict';
// agent-sdk-watchdog: the agent-watchdog and claude-watchdog binaries, shipped in one package
// per platform (`@agent-sdk-watchdog/<platform>-<arch>`, an optional dependency that npm
// installs only where it fits), and the query() wiring for the TypeScript Agent SDK.

const { spawn } = require('node:child_process');

const NAMES = ['claude-watchdog', 'agent-watchdog'];

/** The per-platform package holding the binaries for this platform. */
function platformPackage(platform = process.platform, arch = process.arch) {
  return `@agent-sdk-watchdog/${platform}-${arch}`;
}

/**
 * The path of an installed binary (`claude-watchdog` by default), from the platform package.
 * Throws with what to do when the platform has no package or it was not installed.
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
    throw new Error(
      `${pkg} is not installed: agent-sdk-watchdog ships its binaries in per-platform optional ` +
        `dependencies (built so far: linux-x64). Reinstall without --omit=optional / ` +
        `--no-optional, or install the binaries with cargo or pip.`,
    );
  }
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
const PATHS = { record: 'RECORD', summary: 'SUMMARY', claude: 'CLAUDE' };
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

/**
 * `pathToClaudeCodeExecutable` and `env` for query() options: the native claude-watchdog (no
 * node launcher in between) and `env` (default: `process.env`; the TypeScript SDK replaces the
 * environment with it) with the policy variables over it.
 */
function watchdogOptions(policy = {}, env = process.env) {
  return {
    pathToClaudeCodeExecutable: binaryPath('claude-watchdog'),
    env: { ...env, ...watchdogEnv(policy) },
  };
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

module.exports = { binaryPath, platformPackage, watchdogEnv, watchdogOptions, launch };

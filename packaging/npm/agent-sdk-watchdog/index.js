'use strict';
// agent-sdk-watchdog: the agent-watchdog and claude-watchdog binaries, shipped in one package
// per platform (`@agent-sdk-watchdog/<platform>-<arch>`, an optional dependency that npm
// installs only where it fits), the Claude Code plugin (plugin/), and the query() wiring for
// the TypeScript Agent SDK. watchdogEnv and watchdogKill call the Rust rules (lib/rules.cjs).

const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');

const SDK = '@anthropic-ai/claude-agent-sdk';

const NAMES = ['claude-watchdog', 'agent-watchdog'];

/** The platforms with a package of binaries (on Linux static executables: any libc). */
const BINARY_PLATFORMS = ['linux-x64', 'linux-arm64', 'win32-x64'];

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
      : `agent-sdk-watchdog has no ${name} for ${here} (its binaries are built for ${BINARY_PLATFORMS.slice(0, -1).join(', ')} and ${BINARY_PLATFORMS.at(-1)})`;
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

// The policy's variables and ranges, and the synthetic result's reader, are the Rust core's
// (lib/rules.cjs, loaded on first use).
const watchdogEnv = (policy) => require('./lib/rules.cjs').watchdogEnv(policy);
const watchdogKill = (message) => require('./lib/rules.cjs').watchdogKill(message);

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

/** A duration: `"90s"`, `"10m"`, `"1h30m"`, `"250ms"`, or a number of seconds. */
export type Duration = string | number;

/** The watchdog policy; every field is optional and unset fields keep the defaults. */
export interface WatchdogPolicy {
  /** No line at all for this long: kill `idle` (default 10m). */
  idle?: Duration;
  /** Keep-alives only (pings, heartbeats) for this long: kill `no_progress` (default 30m). */
  noProgress?: Duration;
  /** No line at all since start: kill `startup` (default 3m). */
  startup?: Duration;
  /** After a result, nothing new and the stream still open: kill `linger` (default 11m). */
  linger?: Duration;
  /** Total age limit: kill `ceiling` (default none). */
  ceiling?: Duration;
  /** Time the CLI gets after SIGTERM before SIGKILL (default 5s; 0 allowed). */
  grace?: Duration;
  /** Patience multiplier before the first completed write and at high utilization (default 2). */
  extendFactor?: number;
  /** Rate-limit utilization (0–1) at or above which patience is extended (default 0.9). */
  highUtilization?: number;
  /** Fraction of a limit at which a stalling warning is shown (default 0.8). */
  warnAt?: number;
  /** Tools whose first completed call ends the pre-write extension. */
  writeTools?: string[];
  /** Write a capture of the run to this file. */
  record?: string;
  /** Write a JSON summary of the run to this file. */
  summary?: string;
  /** The real `claude` (default: the one the SDK would run, see `sdkClaude()`). */
  claude?: string;
  /** The shared ledger (`redis://…`, `postgres://…`) the subagent plugin's hook keeps its markers in. */
  ledger?: string;
  /** How long a busy tool holds the no-progress kill after the last progress (default 2h; 0: never). */
  busyCap?: Duration;
  /** The most an announced API back-off storm holds the idle and no-progress clocks (default 2h). */
  maxBackoff?: Duration;
  /** The drop-in's stdout took nothing for this long: kill `output_blocked` (default 30m; 0: off). */
  outputBlocked?: Duration;
  /** The process tree's memory above this (`512M`, `2G`, or bytes) for 5 s: kill `memory`. */
  maxRss?: string | number;
  /** Exit 3 for every ending without a usable `result`. */
  strict?: boolean;
  /** Where the plugin's hook keeps its continuation markers (without a ledger). */
  stateDir?: string;
  /** Do not continue a subagent cut off by the output token limit. */
  noRecoverOutputLimit?: boolean;
  /** The agent-watchdog the plugin's hook runs. */
  bin?: string;
}

/** A local plugin, as query()'s `plugins` option takes it. */
export interface LocalPlugin {
  type: 'local';
  path: string;
}

/** watchdogOptions()'s own settings, beside the policy. */
export interface WatchdogOptionsSettings extends WatchdogPolicy {
  /** Load this package's plugin (subagent continue-once). Default true. */
  plugin?: boolean;
  /** Your own plugins; this package's is added after them. */
  plugins?: LocalPlugin[];
  /** Where to resolve the Agent SDK from (default: the working directory, then this package). */
  from?: string;
}

/** The query() options that route a session through the watchdog. */
export interface WatchdogOptions {
  pathToClaudeCodeExecutable: string;
  env: Record<string, string | undefined>;
  plugins: LocalPlugin[];
  /** `'initialize'` when the real claude is the SDK's own (it reads MCP servers from stdin). */
  mcpServersDelivery?: 'initialize';
}

/** What watchdogKill() read from the watchdog's final result. */
export interface WatchdogKill {
  /** `idle`, `no_progress`, `startup`, `linger` or `ceiling`. */
  kind: string;
  /** One sentence: what was killed and why. */
  reason: string;
}

/** The claude the SDK would run: its platform package's (`bundled: true`), else PATH's. */
export interface SdkClaude {
  path: string;
  bundled: boolean;
}

/** The per-platform package name, e.g. `@agent-sdk-watchdog/linux-x64`. */
export function platformPackage(platform?: string, arch?: string): string;

/** The platforms with a package of binaries (`@agent-sdk-watchdog/<platform>`: linux-x64, linux-arm64 (static executables, any libc) and win32-x64). */
export const BINARY_PLATFORMS: readonly string[];

/** The path of an installed binary (`claude-watchdog` by default). Throws if not installed. */
/** The platforms this package has binaries for (`linux-x64`, …): its optional platform packages. */
export function binaryPlatforms(): string[];
export function binaryPath(name?: 'claude-watchdog' | 'agent-watchdog'): string;

/** The `AGENT_WATCHDOG_*` variables for a policy. Throws on an unknown field or a bad value. */
export function watchdogEnv(policy?: WatchdogPolicy): Record<string, string>;

/**
 * The claude the TypeScript SDK would run without the watchdog: its platform package
 * (`@anthropic-ai/claude-agent-sdk-<os>-<cpu>[-musl]`, resolved from the SDK), else `claude`
 * on `env.PATH`. Throws, naming what it looked for and where, when there is none.
 */
export function sdkClaude(options?: { from?: string; env?: Record<string, string | undefined> }): SdkClaude;

/** The SDK's platform package names for a platform, in the order the SDK tries them. */
export function sdkPlatformPackages(platform?: string, arch?: string, musl?: boolean): string[];

/** The directory of the Claude Code plugin this package carries. */
export function pluginPath(): string;

/** The watchdog's kill if `message` is claude-watchdog's final result, else `null`. Never throws. */
export function watchdogKill(message: unknown): WatchdogKill | null;

/**
 * query() options: `pathToClaudeCodeExecutable` (the native claude-watchdog), `env` (`env`,
 * default `process.env`, with the policy variables, `AGENT_WATCHDOG_CLAUDE` and
 * `AGENT_WATCHDOG_BIN` over it), `plugins` (this package's plugin unless `plugin: false`) and,
 * when the real claude is the SDK's own, `mcpServersDelivery: 'initialize'`:
 * `query({ prompt, options: { ...watchdogOptions({ idle: '5m' }), cwd } })`.
 */
export function watchdogOptions(
  settings?: WatchdogOptionsSettings,
  env?: Record<string, string | undefined>,
): WatchdogOptions;

/** Runs a binary with this process's arguments and stdio and ends like it (the bin entries). */
export function launch(name: 'claude-watchdog' | 'agent-watchdog'): void;

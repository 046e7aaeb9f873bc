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
  /** The real `claude` (default: the first `claude` on PATH). */
  claude?: string;
}

/** The query() options that route a session through the watchdog. */
export interface WatchdogOptions {
  pathToClaudeCodeExecutable: string;
  env: Record<string, string | undefined>;
}

/** The per-platform package name, e.g. `@agent-sdk-watchdog/linux-x64`. */
export function platformPackage(platform?: string, arch?: string): string;

/** The path of an installed binary (`claude-watchdog` by default). Throws if not installed. */
export function binaryPath(name?: 'claude-watchdog' | 'agent-watchdog'): string;

/** The `AGENT_WATCHDOG_*` variables for a policy. Throws on an unknown field or a bad value. */
export function watchdogEnv(policy?: WatchdogPolicy): Record<string, string>;

/**
 * `pathToClaudeCodeExecutable` (the native claude-watchdog) and `env` (`env`, default
 * `process.env`, with the policy variables over it) for query() options:
 * `query({ prompt, options: { ...watchdogOptions({ idle: '5m' }), cwd } })`.
 */
export function watchdogOptions(
  policy?: WatchdogPolicy,
  env?: Record<string, string | undefined>,
): WatchdogOptions;

/** Runs a binary with this process's arguments and stdio and ends like it (the bin entries). */
export function launch(name: 'claude-watchdog' | 'agent-watchdog'): void;

// Types of the reference agent-sdk-watchdog 0.2.0 API (lib/*.mjs), shared by the ES module
// entry (index.d.mts) and the require() entry (index.d.cts).
import type { Server } from 'node:http';
import type { HookCallback, SDKMessage, SDKRateLimitInfo } from '@anthropic-ai/claude-agent-sdk';
import type { WatchdogOptions, WatchdogPolicy } from '../index.js';

// --- idle watchdog

/**
 * The reference's two kinds; `startup`, `linger` and `no_progress` come only from our opt-in
 * rules, and `task_silent` is the idle kill while background tasks are outstanding.
 */
export type WatchdogKillKind = 'hard_ceiling' | 'watchdog_idle' | 'task_silent' | 'startup' | 'linger' | 'no_progress';
/** Why patience was extended; with both, `high_utilization`. */
export type WatchdogExtendReason = 'high_utilization' | 'pre_write';

export type WatchdogVerdict =
  | { verdict: 'ok' }
  | { verdict: 'extend'; reason: WatchdogExtendReason }
  | { verdict: 'kill'; kind: WatchdogKillKind };

export interface WatchdogConfig {
  /** Base idle patience, ms (default 600000). Must be > 0. */
  idleMs?: number;
  /** How many times `idleMs` a query gets while an extension holds (default 2). Must be >= 1. */
  extendFactor?: number;
  /** Usage (0 to 1) at or above which patience is extended (default 0.9). */
  highUtilization?: number;
  /** The longest the shared timer waits between checks, ms (default 30000). Kills land at their deadlines. */
  tickMs?: number;
  /** The tools whose first completed call ends the pre-write extension (default Write, Edit). */
  writeTools?: readonly string[];
  /** Whether `observe()` counts a `tool_progress` frame as activity (default true). */
  toolHeartbeats?: boolean;
  /** The usage at a check, or null when unknown. */
  getUtilization?: (now: number) => number | null;
  /** The clock for every method called without a time (default Date.now). */
  now?: () => number;
  /** Gets an error that onKill, onExtend or getUtilization threw. */
  onError?: (error: unknown) => void;
  /** Ours, off unless set: kill `startup` when no message at all came within this many ms. */
  startupMs?: number;
  /** Ours, off unless set: kill `linger` when a settled query sees nothing new for this many ms. */
  lingerMs?: number;
  /** Ours, off unless set: kill `no_progress` after this many ms without work (heartbeats aside). */
  noProgressMs?: number;
}

export type ResolvedWatchdogConfig = Readonly<
  Required<Omit<WatchdogConfig, 'startupMs' | 'lingerMs' | 'noProgressMs'>> &
    Pick<WatchdogConfig, 'startupMs' | 'lingerMs' | 'noProgressMs'>
>;
export declare const WATCHDOG_DEFAULTS: ResolvedWatchdogConfig;

export type WatchdogLimits = Pick<ResolvedWatchdogConfig, 'idleMs' | 'extendFactor' | 'highUtilization'> &
  Partial<Pick<WatchdogConfig, 'startupMs' | 'lingerMs' | 'noProgressMs'>>;

export interface WatchdogTimeline {
  startedAt: number;
  lastToolAt: number;
  firstWriteAt: number | null;
  hardCeilingMs: number;
  /** Latest activity of any kind; absent means `lastToolAt`. */
  lastActivityAt?: number;
  /** A `result` arrived and no new work since: only the hard ceiling applies. */
  settled?: boolean;
  /** Ours, for the opt-in rules: a message was seen since registration (default true; a settled timeline has seen one). */
  seen?: boolean;
  /** Ours: when it settled (the linger rule). */
  settledAt?: number;
  /** Ours: the last work, heartbeats aside (the no-progress rule); default the latest clock. */
  lastWorkAt?: number;
}

/** The pure policy: one timeline, one instant, one utilization, the limits -> verdict. */
export declare function evaluateWatchdog(
  timeline: WatchdogTimeline,
  now: number,
  utilization: number | null,
  limits?: WatchdogLimits,
): WatchdogVerdict;

export interface WatchdogKill {
  kind: WatchdogKillKind;
  elapsedMs: number;
  sinceToolMs: number;
}

export interface WatchdogRegistration {
  hardCeilingMs: number;
  /** Aborted on a kill, after `onKill`, even when `onKill` throws. */
  abortController: AbortController;
  /** Called at most once, on a kill, before the abort. */
  onKill?: (kill: WatchdogKill) => void;
  /** Called once, the first time patience is extended. */
  onExtend?: (reason: WatchdogExtendReason, utilization: number | null) => void;
}

export interface WatchdogHandle {
  /** A tool boundary; pass `toolName` once the tool completed (PostToolUse). */
  activity(toolName?: string, now?: number): void;
  /** A stream delta or thinking frame. */
  stream(now?: number): void;
  /** A provider heartbeat: moves the idle clock, does not end a settle. */
  heartbeat(now?: number): void;
  /** A `result` arrived: no idle kill until new work. */
  settle(): void;
  /** Any SDK message (see the README for what counts). */
  observe(message: SDKMessage, now?: number): void;
  /** The kill, or null; still readable after `unregister()`. */
  readonly kill: WatchdogKill | null;
  /**
   * Not in the reference: the query() options that run this session through the native
   * claude-watchdog with this watchdog's limits (`policy` over them), plus this registration's
   * `abortController`. Its kill ends the whole process tree of the session.
   */
  nativeOptions(
    policy?: WatchdogPolicy,
    env?: Record<string, string | undefined>,
  ): WatchdogOptions & { abortController: AbortController };
  /** Call when the query ends. */
  unregister(): void;
}

export interface Watchdog {
  register(reg: WatchdogRegistration, now?: number): WatchdogHandle;
  /** One check by hand; returns the kills it made. */
  tick(now?: number): WatchdogKill[];
  /** Stop the timer and forget every query (what was counted stays). */
  close(): void;
  readonly config: ResolvedWatchdogConfig;
  /** Not in the reference: what this watchdog counted since it was made, and its gauges now. */
  metrics(): WatchdogMetrics;
  /** Not in the reference: the same in the Prometheus text exposition format 0.0.4. */
  renderPrometheus(): string;
}

// --- fleet metrics (ours)

/** A kill kind as the metrics name it: the registry's names (`idle` is `watchdog_idle`, `ceiling` is `hard_ceiling`). */
export type MetricsKillKind =
  | 'ceiling' | 'startup' | 'linger' | 'idle' | 'no_progress' | 'output_blocked' | 'memory'
  | 'task_silent' | 'wakeup_missed' | 'unanswered';
/** How a query ended: by its kill, else by its last result, else `no_result`. */
export type MetricsOutcome = 'success' | 'error_result' | 'killed' | 'no_result' | 'incomplete';

/** A snapshot of a watchdog's counters (totals over every query, never per query), keyed by the series' label values. */
export interface WatchdogMetrics {
  /** Queries registered now. */
  sessions: number;
  /** The utilization read at the last check (`getUtilization`), or null. */
  utilization: number | null;
  /** Queries that ended (`unregister()`), by outcome. */
  ended: Record<MetricsOutcome, number>;
  /** Queries that ended killed, by kill kind. */
  endedKilled: Record<MetricsKillKind, number>;
  kills: Record<MetricsKillKind, number>;
  /** Always 0 here: this API gives no stalling warnings (the series is kept for dashboards). */
  stallingWarnings: Record<'idle' | 'no_progress', number>;
  /** Extensions reported (`onExtend`), by reason. */
  extensions: Record<WatchdogExtendReason, number>;
  /** How late kills came after their deadlines. */
  killLateness: {
    count: number;
    sumSeconds: number;
    /** `[upper bound in seconds, kills at most that late]`, cumulative, ending with `[Infinity, count]`. */
    buckets: Array<[number, number]>;
  };
}

export interface MetricsServerOptions {
  /** Default 9464; 0 takes a free port (see `MetricsServer.port`). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** The time a client has for its request head, and idle time before it is dropped (default 5000). */
  timeoutMs?: number;
  /** The largest request head (default 8192): larger gets 431. */
  maxHeaderBytes?: number;
  /** Connections at once (default 64): more are closed at once. */
  maxConnections?: number;
}

export interface MetricsServer {
  readonly server: Server;
  readonly host: string;
  readonly port: number;
  /** `http://host:port/metrics`. */
  readonly url: string;
  /** Stop listening and close every connection. */
  close(): Promise<void>;
}

export declare const METRICS_CONTENT_TYPE: 'text/plain; version=0.0.4; charset=utf-8';
export declare const METRICS_SERVER_DEFAULTS: Readonly<Required<MetricsServerOptions>>;
/**
 * Serves `watchdog.renderPrometheus()` at `GET /metrics` (node:http; 404 another path, 405 another
 * method, 431 a head too large, 408 a head too slow). Rejects when it cannot listen (port in use).
 * The server does not keep the process alive.
 */
export declare function serveMetrics(
  watchdog: Pick<Watchdog, 'renderPrometheus'>,
  options?: MetricsServerOptions,
): Promise<MetricsServer>;

export declare function createWatchdog(config?: WatchdogConfig): Watchdog;
/** A PreToolUse / PostToolUse / PostToolUseFailure hook feeding one handle. */
export declare function makeWatchdogHook(handle: WatchdogHandle): HookCallback;

// --- rate-limit monitor

export type RateLimitWindow = NonNullable<SDKRateLimitInfo['rateLimitType']>;

export interface RateLimitMonitorConfig {
  /** Usage (0 to 1) at which observe and note return the reading, once (default 0.85). */
  warnAt?: number;
  /** The window read when a reading has no top-level utilization and names no window. */
  fallbackWindow?: RateLimitWindow;
  /** The clock active() reads when it gets no time. */
  now?: () => number;
}

export type ResolvedRateLimitMonitorConfig = Readonly<Required<RateLimitMonitorConfig>>;
export declare const RATE_LIMIT_DEFAULTS: ResolvedRateLimitMonitorConfig;

export interface RateLimitMonitor {
  note(info: SDKRateLimitInfo): SDKRateLimitInfo | null;
  observe(message: SDKMessage): SDKRateLimitInfo | null;
  latest(): SDKRateLimitInfo | null;
  active(now?: number): SDKRateLimitInfo | null;
  reset(): void;
}

export declare function createRateLimitMonitor(config?: RateLimitMonitorConfig): RateLimitMonitor;
export declare function rateLimitResetIso(reading: SDKRateLimitInfo): string | null;
export declare function formatRateLimitReading(reading: SDKRateLimitInfo): string;

// --- SDK warning filter

export declare const SHADOWED_CODE: 'CLAUDE_SDK_CAN_USE_TOOL_SHADOWED';

export interface WarningFilterOptions {
  /** The warning codes to swallow. */
  codes?: readonly string[];
  /** Called with the first warning of each code, and the code. A throw is dropped. */
  onFirst?: (warning: string | Error, code: string) => void;
}

export declare const WARNING_FILTER_DEFAULTS: Readonly<Required<WarningFilterOptions>>;
export declare function installSdkWarningFilter(options?: WarningFilterOptions): boolean;

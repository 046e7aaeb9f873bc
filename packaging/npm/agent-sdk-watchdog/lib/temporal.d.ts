// Types of agent-sdk-watchdog/temporal (lib/temporal.mjs): one Claude session as a Temporal
// activity, under the watchdog.
import type { ApplicationFailure } from '@temporalio/activity';
import type { Duration, WatchdogPolicy } from '../index.js';

export type { Duration };

/** The watchdog policy of the session: these fields of watchdogOptions()'s policy (the
 * activity names the real `claude` itself; a session has no capture, summary or ledger). */
export type SessionPolicy = Pick<
  WatchdogPolicy,
  | 'idle'
  | 'noProgress'
  | 'startup'
  | 'linger'
  | 'ceiling'
  | 'grace'
  | 'extendFactor'
  | 'highUtilization'
  | 'warnAt'
  | 'writeTools'
  | 'busyCap'
  | 'maxBackoff'
  | 'outputBlocked'
  | 'maxRss'
>;

/** What each heartbeat carries, and what a retried attempt reads back. */
export interface ProgressDetails {
  session_id: string | null;
  /** Epoch seconds of the last progress the core counts, or null before any. */
  last_progress: number | null;
  continued: boolean;
}

/** What a successful session resolves to. */
export interface SessionResult {
  session_id: string | null;
  continued: boolean;
  attempt: number;
  result: string | null;
  num_turns: number | null;
  total_cost_usd: number | null;
}

export type Ending =
  | 'idle' | 'no_progress' | 'startup' | 'output' | 'linger' | 'ceiling'
  | 'error_result' | 'refused' | 'ledger' | 'no_result' | 'incomplete';

/** Each ending: [ApplicationFailure type, retryable]. */
export declare const ENDINGS: Readonly<Record<Ending, readonly [string, boolean]>>;

/** The prompt a retried attempt resumes the session with. */
export declare const AFTER_KILL_PROMPT: string;

/** The typed failure of `ending`, with `details` as its one detail. */
export declare function applicationFailure(ending: Ending | string, message: string, details: object): ApplicationFailure;

/** The activity timeouts a policy implies, in milliseconds (`agent-watchdog timeouts`). */
export declare function activityTimeouts(
  policy?: SessionPolicy,
  opts?: { margin?: Duration; env?: Record<string, string | undefined> },
): { heartbeatTimeout: number; startToCloseTimeout: number | null };

export interface RunSessionOptions {
  policy?: SessionPolicy;
  cwd?: string;
  /** The shared ledger (`redis://…`, `postgres://…`); default `AGENT_WATCHDOG_LEDGER`. */
  ledger?: string;
  stateDir?: string;
  continuePrompt?: string;
  /** The session's environment (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** More query() options (`permissionMode`, `allowedTools`, …). */
  options?: Record<string, unknown>;
  /** The real claude (default: the one the SDK would run). */
  claude?: string;
  /** What the drop-in's kill may take beyond its ladder before the heartbeats stop (default 1m). */
  margin?: Duration;
  onHeartbeat?: (details: ProgressDetails) => void;
  /** Stands in for the SDK's query() (a wrapper of yours, or a test's). */
  query?: (args: { prompt: string; options: Record<string, unknown> }) => AsyncIterable<Record<string, any>>;
}

/** Run one Claude session inside the current activity, under the watchdog. */
export declare function runSession(prompt: string, opts?: RunSessionOptions): Promise<SessionResult>;

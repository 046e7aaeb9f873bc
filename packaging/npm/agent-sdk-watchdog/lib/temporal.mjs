// agent-sdk-watchdog/temporal: one Claude session as a Temporal activity, under the watchdog
// (docs/fleets.md). Needs @temporalio/activity and
// @anthropic-ai/claude-agent-sdk; the package's main entry never loads this file.
//
// The session runs through the drop-in (claude-watchdog as pathToClaudeCodeExecutable, see
// watchdogOptions()): the watchdog ends a stalled session with its ladder and stops the whole
// process tree, and a guardian stops it even if the worker is SIGKILLed.
//
// - Heartbeats while the watchdog lets the session run: on a timer (a quarter of the
//   heartbeat timeout, at most 30 s) and on each progress, for as long as the Rust core, under
//   the drop-in's policy, says the session is alive or held (a busy tool, an announced
//   back-off Claude Code waits out in silence, an MCP call, a human wait). When it says the
//   drop-in should have ended the session and it did not, the heartbeats stop. Details:
//   { session_id, last_progress, continued } (last_progress: epoch seconds, or null).
// - A retried attempt resumes the same session once (`resume`), after claiming its marker in
//   the ledger (`agent-watchdog claim`: the marker `run --resume-after-kill` uses); an attempt
//   that finds the session already continued ends with the non-retryable ContinuationRefused.
// - A cancellation (delivered by Temporal with a heartbeat's answer) aborts the query: the SDK
//   sends SIGTERM, the drop-in's ladder stops the tree within its grace (at most 2 s).
// - Each ending is a typed ApplicationFailure (ENDINGS), the kill as its details: the ending
//   `agent-watchdog run` reports for the same stream.
// The rules (the session's fold, the endings, the timeouts, the prompt) are the Rust core's
// (lib/rules.cjs); this file is the SDK loop around them.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';

import { ApplicationFailure, Context } from '@temporalio/activity';

import { core } from './core.mjs';

const require = createRequire(import.meta.url);
const { binaryPath, watchdogEnv, watchdogOptions } = require('../index.js');
const { bind, ok } = require('./rules.cjs');
const { SdkRun, call, tables } = bind(() => core);

/** The prompt a retried attempt resumes the session with (the watchdog's own, for `run`). */
export const AFTER_KILL_PROMPT = tables().afterKillPrompt;

/** Each ending: [ApplicationFailure type, retryable]. */
export const ENDINGS = Object.freeze(tables().failures);

/** The typed failure of `ending` (a key of ENDINGS; an unknown kill kind is retryable). */
export function applicationFailure(ending, message, details) {
  const [type, retryable] = ENDINGS[ending] ?? tables().fallback;
  return ApplicationFailure.create({ message, type, nonRetryable: !retryable, details: [details] });
}

/**
 * The activity timeouts a policy implies (the core's rule, the one `agent-watchdog timeouts`
 * prints), in milliseconds: `heartbeatTimeout` = max(startup, idle × extendFactor,
 * noProgress) + grace + margin (runSession heartbeats through every hold, so this is how late a
 * dead worker is noticed at most), `startToCloseTimeout` = ceiling + grace + margin (`null`
 * without a ceiling). The policy is read as the drop-in reads it: these fields over `env`'s
 * `AGENT_WATCHDOG_*` variables.
 */
export function activityTimeouts(policy = {}, { margin = '1m', env = process.env } = {}) {
  const t = ok(call('rules_timeouts', { env: { ...env, ...watchdogEnv(policy) }, margin }));
  return { heartbeatTimeout: t.heartbeatTimeout, startToCloseTimeout: t.startToCloseTimeout };
}

function claim(sessionId, { ledger, stateDir, prompt, env }) {
  const argv = ['claim', sessionId, '--prompt', prompt];
  if (ledger) argv.push('--ledger', ledger);
  if (stateDir) argv.push('--state-dir', stateDir);
  return new Promise((resolve) => {
    execFile(binaryPath('agent-watchdog'), argv, { env, encoding: 'utf8' }, (error, stdout, stderr) => {
      const last = (stdout ?? '').trim().split('\n').pop();
      try {
        resolve(JSON.parse(last));
      } catch {
        resolve({ claimed: false, error: (stderr ?? '').trim() || `agent-watchdog claim failed: ${error?.message ?? 'no answer'}` });
      }
    });
  });
}

function previousDetails(details) {
  const d = Array.isArray(details) ? details.find((x) => x && typeof x === 'object') : details;
  return d && typeof d === 'object' && typeof d.session_id === 'string' && d.session_id ? d : null;
}

/**
 * Run one Claude session inside the current activity, under the watchdog.
 *
 * Resolves to `{ session_id, continued, attempt, result, num_turns, total_cost_usd }` for a
 * session that succeeds; every other ending throws its typed ApplicationFailure (ENDINGS, the
 * kill or the result as details). `ledger` (else `AGENT_WATCHDOG_LEDGER`) names the shared
 * ledger every worker uses for the continue-once marker; without one, the state directory
 * (`stateDir`, else the default) of this machine. `options`: more query() options
 * (`permissionMode`, `allowedTools`…); `env` (default `process.env`) the session's environment;
 * `margin` (default 1m) what the drop-in's kill may take beyond its ladder before the
 * heartbeats stop; `onHeartbeat(details)` sees each heartbeat (for logs and tests); `query`
 * stands in for the SDK's query() (a wrapper of yours, or a test's).
 */
export async function runSession(prompt, {
  policy = {},
  cwd,
  ledger,
  stateDir,
  continuePrompt = AFTER_KILL_PROMPT,
  env = process.env,
  options = {},
  claude,
  margin = '1m',
  onHeartbeat,
  query,
} = {}) {
  if (!query) ({ query } = await import('@anthropic-ai/claude-agent-sdk'));
  const ctx = Context.current();
  const info = ctx.info;
  ledger = ledger || env.AGENT_WATCHDOG_LEDGER || process.env.AGENT_WATCHDOG_LEDGER || undefined;
  const sessionEnv = { ...env };
  // The plugin's hook (a subagent's continue-once) keeps its markers there too.
  if (ledger) sessionEnv.AGENT_WATCHDOG_LEDGER = ledger;
  const previous = previousDetails(info.heartbeatDetails);
  let continued = false;
  let sessionId = null;
  if (previous) {
    sessionId = previous.session_id;
    const facts = { session_id: sessionId, attempt: info.attempt, last_progress: previous.last_progress ?? null };
    if (previous.continued) {
      throw applicationFailure('refused', `session ${sessionId} was already continued once: not continuing it again`, facts);
    }
    const answer = await claim(sessionId, { ledger, stateDir, prompt: continuePrompt, env: sessionEnv });
    if (answer.error) {
      throw applicationFailure('ledger', `cannot claim the continuation of session ${sessionId}: ${answer.error}`, { ...facts, error: answer.error });
    }
    if (!answer.claimed) {
      throw applicationFailure('refused', `session ${sessionId}: ${answer.reason ?? 'already continued'}`, facts);
    }
    continued = true;
  }

  const abortController = new AbortController();
  const onCancel = () => abortController.abort();
  ctx.cancellationSignal.addEventListener('abort', onCancel, { once: true });
  const sdk = watchdogOptions({ ...policy, ...(claude ? { claude } : {}) }, sessionEnv);
  const queryOptions = { ...options, ...sdk, abortController };
  if (cwd !== undefined) queryOptions.cwd = cwd;
  if (continued) queryOptions.resume = sessionId;
  // The session's fold, under the policy the drop-in reads; a permission callback is a human wait.
  const run = new SdkRun(sdk.env, margin);
  if (typeof options.canUseTool === 'function') queryOptions.canUseTool = (...args) => run.asked(options.canUseTool, args);

  const heartbeat = () => {
    const details = { session_id: run.sessionId ?? sessionId, last_progress: run.lastProgress, continued };
    ctx.heartbeat(details);
    if (onHeartbeat) onHeartbeat(details);
  };
  const every = Math.min(Math.max((info.heartbeatTimeoutMs ?? 120_000) / 4, 50), 30_000);
  // Stops for good once the watchdog should have ended the session: the heartbeat timeout says so.
  const timer = setInterval(() => (run.alive() ? heartbeat() : clearInterval(timer)), every);

  let result = null;
  let failed = null;
  let facts;
  let ending;
  try {
    for await (const message of query({ prompt: continued ? continuePrompt : prompt, options: queryOptions })) {
      const step = run.observe(message);
      if (step.progress) heartbeat();
      if (!step.kill && message?.type === 'result') result = message;
    }
  } catch (error) {
    // The SDK throws after an error result too (ours included), and when it is aborted.
    failed = ctx.cancellationSignal.aborted ? (ctx.cancellationSignal.reason ?? error) : error;
  } finally {
    clearInterval(timer);
    ctx.cancellationSignal.removeEventListener('abort', onCancel);
    facts = { session_id: run.sessionId ?? sessionId, continued, attempt: info.attempt };
    ending = run.finish(); // the fold is freed, whatever happens next
  }
  if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? failed;
  if (failed && !result && !run.killed) throw failed;
  const { end, message, failure, kill } = ending;
  if (kill) throw applicationFailure(end, message, { ...facts, kill });
  const text = typeof result?.result === 'string' ? result.result : null;
  if (result && failure) Object.assign(facts, { subtype: result.subtype ?? null, terminal_reason: result.terminal_reason ?? null, result: text });
  if (failure) throw applicationFailure(end, message, facts);
  return { ...facts, result: text, num_turns: result.num_turns ?? null, total_cost_usd: result.total_cost_usd ?? null };
}

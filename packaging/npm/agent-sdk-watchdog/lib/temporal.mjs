// agent-sdk-watchdog/temporal: one Claude session as a Temporal activity, under the watchdog
// (docs/fleets.md). Needs @temporalio/activity and
// @anthropic-ai/claude-agent-sdk; the package's main entry never loads this file.
//
// The session runs through the drop-in (claude-watchdog as pathToClaudeCodeExecutable, see
// watchdogOptions()): the watchdog ends a stalled session with its ladder and stops the whole
// process tree, and a guardian stops it even if the worker is SIGKILLed.
//
// - Heartbeats only on progress: when the conversation moves (an `assistant` or `user`
//   message), never on keep-alives. Details: { session_id, last_progress, continued }
//   (last_progress: epoch seconds).
// - A retried attempt resumes the same session once (`resume`), after claiming its marker in
//   the ledger (`agent-watchdog claim`: the marker `run --resume-after-kill` uses); an attempt
//   that finds the session already continued ends with the non-retryable ContinuationRefused.
// - A cancellation (delivered by Temporal with a heartbeat's answer) aborts the query: the SDK
//   sends SIGTERM, the drop-in's ladder stops the tree within its grace (at most 2 s).
// - Each ending is a typed ApplicationFailure (ENDINGS), the kill as its details.
import { execFile, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

import { ApplicationFailure, Context } from '@temporalio/activity';

const require = createRequire(import.meta.url);
const { binaryPath, watchdogEnv, watchdogKill, watchdogOptions } = require('../index.js');

/** The prompt a retried attempt resumes the session with (the watchdog's own, for `run`). */
export const AFTER_KILL_PROMPT =
  'The previous run was stopped because it stopped making progress. Continue the unfinished task from where it stopped, without recap.';

/** Each ending: [ApplicationFailure type, retryable]. */
export const ENDINGS = Object.freeze({
  idle: ['WatchdogIdle', true],
  no_progress: ['WatchdogNoProgress', true],
  startup: ['WatchdogStartup', true],
  output: ['WatchdogOutput', true],
  linger: ['WatchdogLinger', true],
  ceiling: ['WatchdogCeiling', false],
  error_result: ['ClaudeErrorResult', false],
  refused: ['ContinuationRefused', false],
  ledger: ['LedgerUnavailable', true],
  no_result: ['ClaudeNoResult', true],
});

/** The typed failure of `ending` (a key of ENDINGS; an unknown kill kind is retryable). */
export function applicationFailure(ending, message, details) {
  const [type, retryable] = ENDINGS[ending] ?? ['WatchdogKill', true];
  return ApplicationFailure.create({ message, type, nonRetryable: !retryable, details: [details] });
}

const POLICY_KEYS = new Set(['idle', 'noProgress', 'startup', 'ceiling', 'extendFactor', 'grace', 'linger', 'writeTools', 'highUtilization', 'warnAt']);

function policyOnly(policy) {
  const out = {};
  for (const [k, v] of Object.entries(policy ?? {})) {
    if (!POLICY_KEYS.has(k)) throw new TypeError(`unknown policy field ${JSON.stringify(k)}: expected one of ${[...POLICY_KEYS].join(', ')}`);
    out[k] = v;
  }
  return out;
}

/**
 * The activity timeouts a policy implies, by `agent-watchdog timeouts` (the one rule, for both
 * helpers), in milliseconds: `heartbeatTimeout` = max(startup, idle × extendFactor,
 * noProgress) + grace + margin (past it the watchdog has ended the session: a heartbeat
 * timeout means the worker is gone), `startToCloseTimeout` = ceiling + grace + margin
 * (`null` without a ceiling). The policy is read as the drop-in reads it: these fields over
 * `env`'s `AGENT_WATCHDOG_*` variables. Call it where the workflow is started, not in workflow
 * code (it runs a command).
 */
export function activityTimeouts(policy = {}, { margin = '1m', env = process.env } = {}) {
  const vars = { ...env, ...watchdogEnv(policyOnly(policy)) };
  const out = execFileSync(binaryPath('agent-watchdog'), ['timeouts', '--margin', String(margin)], {
    env: vars,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const t = JSON.parse(out);
  return { heartbeatTimeout: t.heartbeat_timeout_ms, startToCloseTimeout: t.start_to_close_timeout_ms };
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

// How Claude Code marks a turn it stopped on an interrupt (the watchdog's ladder starts with
// one): "[Request interrupted by user]", "… for tool use]".
const INTERRUPTED = '[Request interrupted';

function* texts(content) {
  if (typeof content === 'string') yield content;
  else if (Array.isArray(content)) {
    for (const block of content) {
      if (block && typeof block === 'object') {
        for (const v of [block.text, block.content]) if (typeof v === 'string' || Array.isArray(v)) yield* texts(v);
      }
    }
  }
}

/** A user message that says the turn was interrupted: the end of a stopped turn, not progress. */
function interrupted(message) {
  for (const t of texts(message?.message?.content)) if (t.trimStart().startsWith(INTERRUPTED)) return true;
  return false;
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
 * `onHeartbeat(details)` sees each heartbeat (for logs and tests); `query` stands in for the
 * SDK's query() (a wrapper of yours, or a test's).
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
  let lastProgress = null;
  if (previous) {
    sessionId = previous.session_id;
    lastProgress = previous.last_progress ?? null;
    const facts = { session_id: sessionId, attempt: info.attempt, last_progress: lastProgress };
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
  const sdk = watchdogOptions({ ...policyOnly(policy), ...(claude ? { claude } : {}) }, sessionEnv);
  const queryOptions = { ...options, ...sdk, abortController };
  if (cwd !== undefined) queryOptions.cwd = cwd;
  if (continued) queryOptions.resume = sessionId;

  const heartbeat = (at) => {
    const details = { session_id: sessionId, last_progress: at, continued };
    ctx.heartbeat(details);
    if (onHeartbeat) onHeartbeat(details);
  };
  // A progress message is heartbeated when the next message shows it was not the start of an
  // interruption (the watchdog's ladder begins with one: Claude Code then reports its partial
  // reply and "[Request interrupted by user]", which are the end of a stall, not progress).
  let pending = null;

  let kill = null;
  let result = null;
  try {
    for await (const message of query({ prompt: continued ? continuePrompt : prompt, options: queryOptions })) {
      if (message.type === 'system' && message.subtype === 'init') {
        if (typeof message.session_id === 'string' && message.session_id) sessionId = message.session_id;
      } else if (message.type === 'assistant' || message.type === 'user') {
        if (message.type === 'user' && interrupted(message)) {
          pending = null;
          continue;
        }
        // The conversation moved: a model turn or a tool result.
        if (pending !== null && sessionId) heartbeat(pending);
        if (typeof message.session_id === 'string' && message.session_id) sessionId = message.session_id;
        lastProgress = pending = Date.now() / 1000;
      } else if (message.type === 'result') {
        pending = null;
        const ours = watchdogKill(message);
        if (ours) kill = kill ?? ours;
        else if (!result) result = message;
      }
    }
  } catch (error) {
    // The SDK throws after an error result too (ours included), and when it is aborted.
    if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? error;
    if (!result && !kill) throw error;
  } finally {
    ctx.cancellationSignal.removeEventListener('abort', onCancel);
  }
  if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;

  const facts = { session_id: sessionId, continued, attempt: info.attempt };
  const succeeded = result !== null && result.is_error !== true && result.subtype === 'success';
  // A session that succeeded and then stayed open (a `linger` kill) did its work.
  if (kill && !succeeded) {
    throw applicationFailure(kill.kind, `watchdog ${kill.kind}: ${kill.reason}`, { ...facts, kill });
  }
  if (!result) throw applicationFailure('no_result', 'the session ended without a result', facts);
  if (!succeeded) {
    throw applicationFailure('error_result', `the session ended with an error result (${result.subtype})`, {
      ...facts,
      subtype: result.subtype ?? null,
      terminal_reason: result.terminal_reason ?? null,
      result: typeof result.result === 'string' ? result.result : null,
    });
  }
  return {
    ...facts,
    result: typeof result.result === 'string' ? result.result : null,
    num_turns: result.num_turns ?? null,
    total_cost_usd: result.total_cost_usd ?? null,
  };
}

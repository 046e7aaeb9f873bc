// agent-sdk-watchdog/temporal in Temporal's MockActivityEnvironment: the fast, deterministic
// cases (no server, no claude), as test_activity_env.py does for Python. The SDK's query() is a
// script of messages (runSession's `query`); the claim and the timeouts run the installed
// agent-watchdog. Run by scripts/test-fleet (node --test) beside the test's node_modules.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { AFTER_KILL_PROMPT, ENDINGS, activityTimeouts, runSession } from 'agent-sdk-watchdog/temporal';

const SID = '90455ab9-05b5-4ba0-9d10-01a53fd0bcdc';
const INIT = { type: 'system', subtype: 'init', session_id: SID };
const success = (sid = SID) => ({ type: 'result', subtype: 'success', is_error: false, session_id: sid, result: 'done', num_turns: 1 });
const ours = (kind, sid = SID) => ({
  type: 'result', subtype: 'error_during_execution', is_error: true, session_id: sid,
  terminal_reason: `watchdog_${kind}`, result: `agent-watchdog killed claude (${kind})`,
});

/** query(): yields `messages`, then waits for the abort (if `block`); records calls and the end. */
function script(messages, { block = false } = {}) {
  const s = { calls: [], closed: false };
  s.query = ({ prompt, options }) => {
    s.calls.push({ prompt, options });
    return (async function* gen() {
      try {
        for (const m of messages) yield m;
        if (block) {
          await new Promise((_, reject) => {
            options.abortController.signal.addEventListener('abort', () => reject(new Error('aborted')));
          });
        }
      } finally {
        s.closed = true;
      }
    })();
  };
  return s;
}

function envWith(details) {
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  const env = new MockActivityEnvironment(details ? { heartbeatDetails: details, attempt: 2 } : {}, { logger: quiet });
  const beats = [];
  env.on('heartbeat', (d) => beats.push(d));
  return { env, beats };
}

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-helper-'));

function run(env, s, extra = {}) {
  const dir = tmp();
  return env.run(runSession, 'do it', {
    policy: { idle: '1m', ceiling: '10m' },
    cwd: dir,
    stateDir: path.join(dir, 'state'),
    claude: '/bin/true',
    query: s.query,
    ...extra,
  });
}

test('each progress the core counts is heartbeated once confirmed; keep-alives are not', async () => {
  const { env, beats } = envWith();
  const s = script([
    INIT,
    { type: 'stream_event', event: { type: 'ping' } },
    { type: 'system', subtype: 'api_retry' },
    { type: 'rate_limit_event' },
    { type: 'tool_progress', tool_name: 'Bash' },
    { type: 'assistant', session_id: SID, message: { content: [] } },
    { type: 'system', subtype: 'status' },
    { type: 'user', session_id: SID, message: { content: [{ type: 'tool_result', content: 'ok' }] } },
    { type: 'assistant', session_id: SID, message: { content: [{ type: 'text', text: 'done' }] } },
    success(),
  ]);
  const out = await run(env, s);
  assert.equal(out.result, 'done');
  assert.equal(out.continued, false);
  // init, the tool call, the status, the tool result and the answer: each once the next
  // progress (or the result) shows it was no interruption; pings, the retry, the rate-limit
  // event and the tool's heartbeat are keep-alives.
  assert.equal(beats.length, 5, JSON.stringify(beats));
  let last = 0;
  for (const b of beats) {
    assert.deepEqual([b.session_id, b.continued], [SID, false]);
    assert.ok(b.last_progress >= last);
    last = b.last_progress;
  }
  const { options } = s.calls[0];
  assert.match(options.pathToClaudeCodeExecutable, /claude-watchdog$/);
  assert.equal(options.env.AGENT_WATCHDOG_IDLE, '1m');
});

for (const kind of ['idle', 'no_progress', 'startup', 'output', 'ceiling', 'linger', 'somethingnew']) {
  test(`a ${kind} kill is its typed failure with the kill as details`, async () => {
    const { env } = envWith();
    const s = script([INIT, { type: 'assistant', session_id: SID }, ours(kind)]);
    await assert.rejects(run(env, s), (e) => {
      const [type, retryable] = ENDINGS[kind] ?? ['WatchdogKill', true];
      assert.ok(e instanceof ApplicationFailure);
      assert.equal(e.type, type);
      assert.equal(e.nonRetryable, !retryable);
      assert.equal(e.details[0].kill.kind, kind);
      assert.equal(e.details[0].session_id, SID);
      return true;
    });
  });
}

test("the interruption's partial reply and marker are no progress", async () => {
  const { env, beats } = envWith();
  await assert.rejects(run(env, script([
    INIT,
    { type: 'assistant', session_id: SID, message: { content: [{ type: 'tool_use' }] } },
    { type: 'user', session_id: SID, message: { content: [{ type: 'tool_result', content: 'ok' }] } },
    { type: 'assistant', session_id: SID, message: { content: [{ type: 'text', text: 'Working on the next ' }] } },
    { type: 'user', session_id: SID, message: { content: [{ type: 'text', text: '[Request interrupted by user]' }] } },
    ours('idle'),
  ])));
  // init, the tool call, the tool result; not the partial reply.
  assert.equal(beats.length, 3, JSON.stringify(beats));
  const quiet = envWith();
  await assert.rejects(run(quiet.env, script([
    INIT,
    { type: 'stream_event', event: { type: 'ping' } },
    { type: 'assistant', session_id: SID, message: { content: [{ type: 'text', text: 'Thinking about ' }] } },
    { type: 'user', session_id: SID, message: { content: '[Request interrupted by user]' } },
    ours('no_progress'),
  ])));
  // init only.
  assert.equal(quiet.beats.length, 1, JSON.stringify(quiet.beats));
});

test('the ending is run\'s: a linger kill after a success is the kill, a success on tool_use is incomplete', async () => {
  await assert.rejects(run(envWith().env, script([INIT, success(), ours('linger')])), (e) =>
    e.type === 'WatchdogLinger' && e.nonRetryable === false && e.details[0].kill.kind === 'linger');
  const midTask = { type: 'result', subtype: 'success', is_error: false, stop_reason: 'tool_use', session_id: SID };
  await assert.rejects(run(envWith().env, script([INIT, midTask])), (e) => e.type === 'ClaudeIncomplete' && e.nonRetryable === false);
  await assert.rejects(run(envWith().env, script([INIT, { type: 'result', subtype: 'success', is_error: true, session_id: SID }])), (e) =>
    e.type === 'ClaudeErrorResult' && e.nonRetryable === true);
  await assert.rejects(run(envWith().env, script([INIT])), (e) => e.type === 'ClaudeNoResult' && e.nonRetryable === false);
});

test('a retry resumes the same session once and never twice', async () => {
  const sid = randomUUID();
  const details = { session_id: sid, last_progress: 1, continued: false };
  const state = tmp();
  const { env, beats } = envWith(details);
  const s = script([{ ...INIT, session_id: sid }, { type: 'assistant', session_id: sid }, { type: 'user', session_id: sid }, success(sid)]);
  const out = await run(env, s, { stateDir: state });
  assert.deepEqual([out.continued, out.session_id], [true, sid]);
  assert.equal(s.calls[0].prompt, AFTER_KILL_PROMPT);
  assert.equal(s.calls[0].options.resume, sid);
  assert.ok(beats.length > 0 && beats.every((b) => b.continued === true));
  // The marker is claimed: the same details again are refused, and nothing runs.
  const again = script([success(sid)]);
  await assert.rejects(run(envWith(details).env, again, { stateDir: state }), (e) =>
    e.type === 'ContinuationRefused' && e.nonRetryable === true);
  assert.equal(again.calls.length, 0);
  await assert.rejects(run(envWith({ ...details, continued: true }).env, script([])), (e) => e.type === 'ContinuationRefused');
});

test('an unusable ledger fails closed, retryable, without its password', async () => {
  const s = script([success()]);
  const { env } = envWith({ session_id: randomUUID(), continued: false });
  await assert.rejects(run(env, s, { ledger: 'redis://u:Pa55-w0rd-x@127.0.0.1:1/0' }), (e) => {
    assert.equal(e.type, 'LedgerUnavailable');
    assert.equal(e.nonRetryable, false);
    assert.ok(!e.message.includes('Pa55-w0rd-x') && !JSON.stringify(e.details).includes('Pa55-w0rd-x'));
    return true;
  });
  assert.equal(s.calls.length, 0);
});

test('a cancel aborts the query', async () => {
  const { env, beats } = envWith();
  const s = script([INIT, { type: 'assistant', session_id: SID }, { type: 'user', session_id: SID }], { block: true });
  const running = run(env, s);
  while (beats.length === 0) await new Promise((r) => setImmediate(r));
  env.cancel();
  await assert.rejects(running, (e) => e instanceof CancelledFailure);
  assert.ok(s.closed, 'the query ended (so the SDK ends the drop-in and its tree)');
  assert.ok(s.calls[0].options.abortController.signal.aborted);
});

test('the timeouts are derived from the policy', () => {
  const t = activityTimeouts({ idle: '5m', noProgress: '20m', startup: '3m', ceiling: '2h', grace: '2s' }, { margin: '1m', env: {} });
  assert.equal(t.heartbeatTimeout, (21 * 60 + 2) * 1000);
  assert.equal(t.startToCloseTimeout, (2 * 3600 + 60 + 2) * 1000);
  assert.equal(activityTimeouts({}, { env: {} }).startToCloseTimeout, null);
  assert.throws(() => activityTimeouts({ idle: '0s' }, { env: {} }));
});

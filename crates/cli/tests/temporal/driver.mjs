// A Temporal workflow + worker + activity around agent-sdk-watchdog/temporal's runSession, run
// against a real Temporal server (crates/cli/tests/fleet_temporal.rs drives it; driver.py is
// the same in Python). Same environment and the same JSON lines on stdout as driver.py.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

import { Context } from '@temporalio/activity';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { activityTimeouts, runSession } from 'agent-sdk-watchdog/temporal';
import { query as sdkQuery } from '@anthropic-ai/claude-agent-sdk';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASE = process.env.CASE;
const WORK_DIR = process.env.WORK_DIR;
const POLICY = JSON.parse(process.env.POLICY ?? '{}');
const OWN = new Set(['CASE', 'POLICY', 'MAX_ATTEMPTS', 'TEMPORAL_ADDRESS', 'LEDGER', 'STATE_DIR', 'NODE_MODULES', 'ROLE', 'QUEUE']);
const SESSION_ENV = Object.fromEntries(Object.entries(process.env).filter(([k]) => !OWN.has(k)));

const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const attempts = new Set();
let firstHeartbeat;
const heartbeated = new Promise((resolve) => { firstHeartbeat = resolve; });

// The policy's fields in the helper's (watchdogOptions') camelCase.
const camel = (k) => k.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
const { margin = '1m', ...fields } = POLICY;
const policy = Object.fromEntries(Object.entries(fields).map(([k, v]) => [camel(k), v]));

const activities = {
  async runClaude(prompt) {
    const { attempt, currentAttemptScheduledTimestampMs: scheduled } = Context.current().info;
    attempts.add(attempt);
    emit({ event: 'attempt_started', attempt, t: Date.now() / 1000, scheduled: scheduled / 1000 });
    try {
      return await runSession(prompt, {
        policy,
        cwd: WORK_DIR,
        ledger: process.env.LEDGER || undefined,
        stateDir: process.env.STATE_DIR || undefined,
        env: SESSION_ENV,
        margin,
        // Partial messages on: the keep-alives (pings) reach the helper, which must not heartbeat on them.
        options: { permissionMode: 'bypassPermissions', allowDangerouslySkipPermissions: true, includePartialMessages: true },
        // The SDK's query(), each message it yields reported (what the heartbeats are checked against).
        query: (args) => (async function* reported() {
          for await (const m of sdkQuery(args)) {
            emit({ event: 'message', attempt, type: m.type, subtype: m.subtype ?? null, text: JSON.stringify(m).slice(0, 300) });
            yield m;
          }
        })(),
        onHeartbeat: (d) => {
          emit({ event: 'heartbeat', attempt, t: Date.now() / 1000, ...d });
          firstHeartbeat();
        },
      });
    } catch (e) {
      emit({ event: 'attempt_error', attempt, error: `${e?.name}: ${e?.message}`, type: e?.type ?? null });
      throw e;
    } finally {
      emit({ event: 'attempt_ended', attempt, t: Date.now() / 1000 });
    }
  },
};

function treeLeft() {
  const left = [];
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    let cwd;
    try { cwd = fs.readlinkSync(`/proc/${pid}/cwd`); } catch { continue; }
    if (cwd === WORK_DIR || cwd.startsWith(`${WORK_DIR.replace(/\/$/, '')}/`)) left.push(Number(pid));
  }
  return left;
}

function describe(err) {
  let cause = err;
  while (cause && !(cause instanceof ApplicationFailure) && !(cause instanceof CancelledFailure)) cause = cause.cause;
  if (cause instanceof CancelledFailure) return [null, true];
  if (cause instanceof ApplicationFailure) {
    const details = cause.details ?? [];
    return [{ type: cause.type, non_retryable: cause.nonRetryable, message: cause.message, details: details[0] ?? null }, false];
  }
  return [{ type: err?.name ?? 'Error', message: String(err) }, false];
}

Runtime.install({ logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: (m) => process.stderr.write(`${m}\n`) } });
const address = process.env.TEMPORAL_ADDRESS;
// Derived from the policy outside the workflow, passed in as input.
const timeouts = activityTimeouts(policy, { margin, env: SESSION_ENV });
const queue = process.env.QUEUE || `claude-${randomUUID()}`;
const makeWorker = async () => Worker.create({
  connection: await NativeConnection.connect({ address }),
  taskQueue: queue,
  workflowsPath: path.join(here, 'workflows.mjs'),
  activities,
  // Heartbeats reach the server at once (a cancel is delivered with the answer to one).
  maxHeartbeatThrottleInterval: '500ms',
  defaultHeartbeatThrottleInterval: '500ms',
});
if (process.env.ROLE === 'worker') {
  await (await makeWorker()).run(); // until SIGKILLed
}

// CASE=kill: a worker of its own runs the first attempt; SIGKILL it once it heartbeated a
// session that made progress twice. Its events are relayed.
async function firstAttemptElsewhere() {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
    env: { ...process.env, ROLE: 'worker', QUEUE: queue },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const progress = new Set();
  const { createInterface } = await import('node:readline');
  for await (const line of createInterface({ input: child.stdout })) {
    process.stdout.write(`${line}\n`);
    let e;
    try { e = JSON.parse(line); } catch { continue; }
    if (e.event === 'heartbeat' && e.session_id && e.last_progress) progress.add(e.last_progress);
    if (progress.size >= 2) break;
  }
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  emit({ event: 'worker_killed', t: Date.now() / 1000 });
  await exited;
}

const client = new Client({ connection: await Connection.connect({ address }) });
let ok = null;
let error = null;
let cancelled = false;
const start = () => client.workflow.start('claudeSession', {
  args: [process.env.PROMPT ?? 'Say hello.', timeouts.heartbeatTimeout, timeouts.startToCloseTimeout, Number(process.env.MAX_ATTEMPTS ?? '1')],
  taskQueue: queue,
  workflowId: `claude-${randomUUID()}`,
});
let handle = null;
if (CASE === 'kill') {
  handle = await start();
  await firstAttemptElsewhere();
}
const worker = await makeWorker();
await worker.runUntil(async () => {
  handle ??= await start();
  if (CASE === 'cancel') {
    await heartbeated;
    await handle.cancel();
    emit({ event: 'cancel_sent', t: Date.now() / 1000 });
  }
  try {
    ok = await handle.result();
  } catch (e) {
    if (!(e instanceof WorkflowFailedError)) throw e;
    [error, cancelled] = describe(e.cause);
  }
});
// No process of the session's tree is left 5 s after the end (checked until then).
const deadline = Date.now() + 5000;
let left = treeLeft();
while (left.length && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 50));
  left = treeLeft();
}
emit({ event: 'done', ok, error, cancelled, attempts: attempts.size, left, gone_t: left.length ? null : Date.now() / 1000, heartbeat_timeout: timeouts.heartbeatTimeout / 1000 });
process.exit(0);

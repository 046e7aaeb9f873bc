"""A Temporal workflow + worker + activity around agent_sdk_watchdog.temporal.run_session, run
against a real Temporal server (crates/cli/tests/fleet_temporal.rs drives it).

Environment: TEMPORAL_ADDRESS, CASE (healthy | retry | cancel | once | kill | …), PROMPT,
WORK_DIR, POLICY (JSON: SessionPolicy fields), MAX_ATTEMPTS, LEDGER (optional), STATE_DIR
(optional); everything else is passed to the session (the mock's environment). CASE=kill: the
first attempt runs on a worker of its own (this script with ROLE=worker and QUEUE), SIGKILLed
once it has heartbeated a session that made progress; this process's worker takes the retry.

Prints one JSON line per event on stdout:
  {"event":"attempt_started","attempt":n,"t":…,"scheduled":… (when the server scheduled it)}
  {"event":"heartbeat","attempt":n,"session_id":…,"last_progress":…,"continued":…,"t":…}
  {"event":"attempt_ended","attempt":n}
  {"event":"cancel_sent"}
  {"event":"worker_killed","t":…}
  {"event":"done","ok":{…}|null,"error":{"type","non_retryable","message","details"}|null,
   "cancelled":bool,"attempts":n,"left":[pids whose cwd is WORK_DIR, 5 s after the end]}
"""

import asyncio
import dataclasses
import datetime
import json
import os
import sys
import time
import uuid

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from agent_sdk_watchdog.temporal import SessionPolicy, run_session

CASE = os.environ["CASE"]
WORK_DIR = os.environ["WORK_DIR"]
_FIELDS = json.loads(os.environ.get("POLICY", "{}"))
_OWN = {f.name for f in dataclasses.fields(SessionPolicy)} - {"extra"}
# SessionPolicy's own fields, the rest (busy_cap, max_backoff, …) as its extra policy.
POLICY = SessionPolicy(**{k: v for k, v in _FIELDS.items() if k in _OWN}, extra={k: v for k, v in _FIELDS.items() if k not in _OWN})
SESSION_ENV = {
    k: v
    for k, v in os.environ.items()
    if k not in ("CASE", "POLICY", "MAX_ATTEMPTS", "TEMPORAL_ADDRESS", "LEDGER", "STATE_DIR", "ROLE", "QUEUE")
}
first_heartbeat = asyncio.Event()
attempts_seen = set()


def emit(**o):
    sys.stdout.write(json.dumps(o, default=str) + "\n")
    sys.stdout.flush()


def on_heartbeat(details):
    emit(event="heartbeat", attempt=activity.info().attempt, t=time.time(), **details)
    first_heartbeat.set()


def reported_query(prompt, options):
    """The SDK's query(), each message it yields reported (what the heartbeats are checked against)."""
    from claude_agent_sdk import query

    async def gen():
        stream = query(prompt=prompt, options=options)
        try:
            async for m in stream:
                emit(event="message", attempt=activity.info().attempt, type=type(m).__name__, subtype=getattr(m, "subtype", None), text=repr(m)[:300])
                yield m
        finally:
            await stream.aclose()

    return gen()


@activity.defn
async def claude_session(prompt: str) -> dict:
    attempts_seen.add(activity.info().attempt)
    info = activity.info()
    emit(event="attempt_started", attempt=info.attempt, t=time.time(), scheduled=info.current_attempt_scheduled_time.timestamp())
    try:
        return await run_session(
            prompt,
            policy=POLICY,
            cwd=WORK_DIR,
            ledger=os.environ.get("LEDGER") or None,
            state_dir=os.environ.get("STATE_DIR") or None,
            env=SESSION_ENV,
            # Partial messages on: the keep-alives (pings) reach the helper, which must not heartbeat on them.
            options={"permission_mode": "bypassPermissions", "include_partial_messages": True},
            on_heartbeat=on_heartbeat,
            query=reported_query,
        )
    except BaseException as e:
        emit(event="attempt_error", attempt=activity.info().attempt, error=f"{type(e).__name__}: {e}", type=getattr(e, "type", None))
        raise
    finally:
        emit(event="attempt_ended", attempt=activity.info().attempt, t=time.time())


@workflow.defn
class ClaudeSession:
    @workflow.run
    async def run(self, prompt: str, heartbeat_s: float, start_to_close_s: float, attempts: int) -> dict:
        return await workflow.execute_activity(
            claude_session,
            prompt,
            heartbeat_timeout=datetime.timedelta(seconds=heartbeat_s),
            start_to_close_timeout=datetime.timedelta(seconds=start_to_close_s),
            retry_policy=RetryPolicy(
                maximum_attempts=attempts,
                initial_interval=datetime.timedelta(milliseconds=200),
                backoff_coefficient=1.0,
            ),
        )


def tree_left():
    """Processes (other than this one) whose working directory is WORK_DIR or below."""
    left = []
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd == WORK_DIR or cwd.startswith(WORK_DIR.rstrip("/") + "/"):
            left.append(int(pid))
    return left


def describe(err):
    cause = err
    while cause is not None and not isinstance(cause, (ApplicationError, CancelledError)):
        cause = cause.__cause__
    if isinstance(cause, CancelledError):
        return None, True
    if isinstance(cause, ApplicationError):
        details = list(cause.details) if cause.details else []
        return {
            "type": cause.type,
            "non_retryable": cause.non_retryable,
            "message": cause.message,
            "details": details[0] if details else None,
        }, False
    return {"type": type(err).__name__, "message": str(err)}, False


def worker(client, queue):
    return Worker(
        client,
        task_queue=queue,
        workflows=[ClaudeSession],
        activities=[claude_session],
        # Heartbeats reach the server at once (a cancel is delivered with the answer to one).
        max_heartbeat_throttle_interval=datetime.timedelta(milliseconds=500),
        default_heartbeat_throttle_interval=datetime.timedelta(milliseconds=500),
    )


async def first_attempt_elsewhere(queue):
    """CASE=kill: a worker of its own runs the first attempt; SIGKILL it once it heartbeated a
    session that made progress twice. Its events are relayed."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, env={**os.environ, "ROLE": "worker", "QUEUE": queue}, stdout=asyncio.subprocess.PIPE
    )
    progress = set()
    async for line in child.stdout:
        sys.stdout.write(line.decode())
        sys.stdout.flush()
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("event") == "heartbeat" and e.get("session_id") and e.get("last_progress"):
            progress.add(e["last_progress"])
            if len(progress) >= 2:
                break
    child.kill()
    emit(event="worker_killed", t=time.time())
    await child.wait()


async def main():
    client = await Client.connect(os.environ["TEMPORAL_ADDRESS"])
    queue = os.environ.get("QUEUE") or f"claude-{uuid.uuid4()}"
    if os.environ.get("ROLE") == "worker":
        async with worker(client, queue):
            await asyncio.Event().wait()
    # Derived from the policy outside the workflow, passed in as input.
    timeouts = POLICY.activity_options()
    heartbeat_s = timeouts["heartbeat_timeout"].total_seconds()
    start_to_close_s = timeouts["start_to_close_timeout"].total_seconds()
    ok = error = None
    cancelled = False
    args = [os.environ.get("PROMPT", "Say hello."), heartbeat_s, start_to_close_s, int(os.environ.get("MAX_ATTEMPTS", "1"))]
    if CASE == "kill":
        handle = await client.start_workflow(ClaudeSession.run, args=args, id=f"claude-{uuid.uuid4()}", task_queue=queue)
        await first_attempt_elsewhere(queue)
    async with worker(client, queue):
        if CASE != "kill":
            handle = await client.start_workflow(ClaudeSession.run, args=args, id=f"claude-{uuid.uuid4()}", task_queue=queue)
        if CASE == "cancel":
            await first_heartbeat.wait()
            await handle.cancel()
            emit(event="cancel_sent", t=time.time())
        try:
            ok = await handle.result()
        except WorkflowFailureError as e:
            error, cancelled = describe(e.cause)
    # No process of the session's tree is left 5 s after the end (checked until then).
    deadline = time.monotonic() + 5
    left = tree_left()
    while left and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        left = tree_left()
    emit(event="done", ok=ok, error=error, cancelled=cancelled, attempts=len(attempts_seen), left=left, gone_t=time.time() if not left else None, heartbeat_timeout=heartbeat_s)


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    # As examples/temporal/run.py: end before the interpreter finalizes the SDK's native runtime.
    os._exit(0)

"""One command: a worker (workflow + activity) and one workflow run, against a Temporal server.

    temporal server start-dev                       # in another terminal (localhost:7233)
    python run.py "Fix the failing test" --cwd /path/to/repo

Environment: TEMPORAL_ADDRESS (default localhost:7233), AGENT_WATCHDOG_LEDGER (a shared
ledger for a fleet: redis://… or postgres://…; default: this machine's state directory).
Prints the session's result as JSON, or the typed error with its details; exits 1 on an error.
"""

import argparse
import asyncio
import json
import os
import sys
import uuid
from datetime import timedelta

from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from activities import POLICY, claude_session  # noqa: E402
from workflows import ClaudeTask  # noqa: E402


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompt")
    parser.add_argument("--cwd", default=os.getcwd())
    parser.add_argument("--permission-mode", default="acceptEdits")
    args = parser.parse_args()

    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    timeouts = POLICY.activity_options()
    task = {
        "prompt": args.prompt,
        "cwd": os.path.abspath(args.cwd),
        "permission_mode": args.permission_mode,
        "heartbeat_timeout_s": timeouts["heartbeat_timeout"].total_seconds(),
        "start_to_close_timeout_s": timeouts["start_to_close_timeout"].total_seconds(),
    }
    queue = "claude-sessions"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[ClaudeTask],
        activities=[claude_session],
        # A cancel reaches an activity with the answer to a heartbeat: send them promptly.
        max_heartbeat_throttle_interval=timedelta(seconds=1),
    ):
        try:
            result = await client.execute_workflow(
                ClaudeTask.run, task, id=f"claude-{uuid.uuid4()}", task_queue=queue
            )
        except WorkflowFailureError as e:
            cause = e.cause
            while cause is not None and not isinstance(cause, ApplicationError):
                cause = cause.__cause__
            if cause is None:
                raise
            print(json.dumps({"error": cause.type, "message": cause.message, "details": list(cause.details)}, indent=2))
            return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    # End here: the Temporal SDK's native runtime can still hold threads while the interpreter
    # finalizes, and then aborts the process (SIGABRT, seen once in 2 runs of the test).
    os._exit(code)

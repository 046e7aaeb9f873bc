"""The activity: one Claude session under the watchdog (agent_sdk_watchdog.temporal).

Every worker of the fleet runs the same code with the same AGENT_WATCHDOG_LEDGER, so a session
is continued at most once whichever worker retries it.
"""

import os

from temporalio import activity

from agent_sdk_watchdog.temporal import SessionPolicy, run_session

# The watchdog's policy: the drop-in enforces it, and the activity timeouts are derived from it
# (SessionPolicy.activity_options(), where the workflow is started).
POLICY = SessionPolicy(idle="5m", no_progress="20m", startup="3m", ceiling="1h", grace="2s")


@activity.defn
async def claude_session(task: dict) -> dict:
    """Run the task's prompt in its working directory; a typed ApplicationError otherwise."""
    return await run_session(
        task["prompt"],
        policy=POLICY,
        cwd=task.get("cwd") or os.getcwd(),
        ledger=os.environ.get("AGENT_WATCHDOG_LEDGER"),
        options={"permission_mode": task.get("permission_mode", "acceptEdits")},
    )

"""The workflow: run the activity with the timeouts and retries the watchdog's policy implies.

Retryable endings (idle, no_progress, startup, output, linger, an unreachable ledger) are
retried: the next attempt resumes the same session once. Non-retryable ones (ceiling, an error
result, a refused continuation) fail the workflow at once.
"""

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities import claude_session


@workflow.defn
class ClaudeTask:
    @workflow.run
    async def run(self, task: dict) -> dict:
        return await workflow.execute_activity(
            claude_session,
            task,
            # Derived from the policy by the starter (a command runs; not in workflow code).
            heartbeat_timeout=timedelta(seconds=task["heartbeat_timeout_s"]),
            start_to_close_timeout=timedelta(seconds=task["start_to_close_timeout_s"]),
            retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=5)),
        )

"""A small Python worker that runs Claude Agent SDK queries under one in-process watchdog
(agent_sdk_watchdog.create_watchdog, on the Rust core).

    pip install claude-agent-sdk agent-sdk-watchdog
    python worker.py "Fix the failing test" "Update the changelog"

Every prompt is a job, run one after another under one watchdog (one timer thread for any
number of queries). Each job prints one JSON line: how it ended, and for a kill which rule
stopped it and why. Then one line of the watchdog's own counts. The exit code is 1 when any job
did not succeed, 2 for a bad command line or limit. WATCHDOG_IDLE and WATCHDOG_NO_PROGRESS set
the limits (default 10m and 30m).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any, Dict, List

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

from agent_sdk_watchdog import Watchdog, WatchdogKilled, create_watchdog


async def run_job(watchdog: Watchdog, prompt: str) -> Dict[str, Any]:
    with watchdog.register(hard_ceiling="2h") as handle:
        # The hooks mark a tool in flight (the SDK drops the CLI's heartbeats).
        options = ClaudeAgentOptions(hooks=handle.hooks(), include_partial_messages=True)
        result = None
        try:
            # guard() feeds every message to the handle and ends the loop the moment a kill
            # lands, even if the SDK never yields again.
            async for message in handle.guard(query(prompt=prompt, options=options)):
                if isinstance(message, ResultMessage):
                    result = message
        except WatchdogKilled as e:
            return {"prompt": prompt, "outcome": "killed", "kill": e.kind, "reason": e.reason}
        if result is None:
            return {"prompt": prompt, "outcome": "no_result"}
        return {"prompt": prompt, "outcome": result.subtype, "result": result.result}


async def main(watchdog: Watchdog, prompts: List[str]) -> int:
    jobs = [await run_job(watchdog, p) for p in prompts]
    for job in jobs:
        print(json.dumps(job))
    m = watchdog.metrics()
    print(f"watchdog: {m.ended['success']} succeeded, {m.kills['idle']} killed idle, "
          f"{m.kills['no_progress']} killed without progress")
    return 0 if all(j["outcome"] == "success" for j in jobs) else 1


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: python worker.py PROMPT [PROMPT…]", file=sys.stderr)
        sys.exit(2)
    try:
        # One watchdog for the whole process, shared by every job.
        wd = create_watchdog(
            idle=os.environ.get("WATCHDOG_IDLE", "10m"),
            no_progress=os.environ.get("WATCHDOG_NO_PROGRESS", "30m"),
        )
    except ValueError as e:  # it names the option, its range and the value
        print(f"python-worker: {e}", file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(wd, sys.argv[1:])))

"""Drives the real Python Agent SDK's query() with cli_path set to the claude-watchdog
drop-in, and reports every message it yields as one JSON line on stdout (same shape as
query.mjs):
  {"event":"message","t_ms":…,"type":…,"subtype":…,"terminal_reason":…,"result":…}
  {"event":"done","t_ms":…,"error":null|"…","count":n}

Environment: DROP_IN (path of claude-watchdog), PROMPT, WORK_DIR; everything else is passed
to the executable unchanged.
"""

import asyncio
import json
import os
import sys
import time

from claude_agent_sdk import ClaudeAgentOptions, query

T0 = time.monotonic()


def emit(**o):
    o["t_ms"] = int((time.monotonic() - T0) * 1000)
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()


KINDS = {
    "SystemMessage": "system",
    "AssistantMessage": "assistant",
    "UserMessage": "user",
    "ResultMessage": "result",
    "StreamEvent": "stream_event",
}


async def main():
    options = ClaudeAgentOptions(
        cli_path=os.environ["DROP_IN"],
        cwd=os.environ.get("WORK_DIR") or os.getcwd(),
        env=dict(os.environ),
        permission_mode="bypassPermissions",
        include_partial_messages=True,
        stderr=lambda line: sys.stderr.write(line + "\n"),
    )
    count = 0
    error = None
    try:
        async for m in query(prompt=os.environ.get("PROMPT", "Say hello."), options=options):
            count += 1
            name = type(m).__name__
            emit(
                event="message",
                type=KINDS.get(name, name),
                subtype=getattr(m, "subtype", None),
                terminal_reason=getattr(m, "terminal_reason", None),
                result=getattr(m, "result", None) if isinstance(getattr(m, "result", None), str) else None,
                is_error=getattr(m, "is_error", None),
                session_id=getattr(m, "session_id", None),
            )
    except Exception as e:  # noqa: BLE001 - report whatever the SDK raised
        error = f"{type(e).__name__}: {e}"
    emit(event="done", error=error, count=count)


asyncio.run(main())

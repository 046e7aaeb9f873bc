"""Drives the real Python Agent SDK's ClaudeSDKClient (streaming input: claude runs with
--input-format stream-json and stdin kept open between turns) with cli_path set to the
claude-watchdog drop-in: turn one, a pause of PAUSE_S seconds while the "user" thinks, turn
two. Reports every message as one JSON line on stdout, then {"event":"done",...}.

Environment: DROP_IN, WORK_DIR, PAUSE_S; everything else is passed to the executable.
"""

import asyncio
import json
import os
import sys
import time

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

T0 = time.monotonic()


def emit(**o):
    o["t_ms"] = int((time.monotonic() - T0) * 1000)
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()


async def main():
    options = ClaudeAgentOptions(
        cli_path=os.environ["DROP_IN"],
        cwd=os.environ.get("WORK_DIR") or os.getcwd(),
        env=dict(os.environ),
        permission_mode="bypassPermissions",
        stderr=lambda line: sys.stderr.write(line + "\n"),
    )
    error = None
    try:
        async with ClaudeSDKClient(options=options) as client:
            for i, text in enumerate(["Turn one: say hello.", "Turn two: say hello again."]):
                if i:
                    emit(event="thinking")
                    await asyncio.sleep(float(os.environ.get("PAUSE_S", "5")))
                await client.query(text)
                async for m in client.receive_response():
                    name = type(m).__name__
                    emit(
                        event="message",
                        type="result" if name == "ResultMessage" else name,
                        subtype=getattr(m, "subtype", None),
                        is_error=getattr(m, "is_error", None),
                    )
    except Exception as e:  # noqa: BLE001 - report whatever the SDK raised
        error = f"{type(e).__name__}: {e}"
    emit(event="done", error=error)


asyncio.run(main())

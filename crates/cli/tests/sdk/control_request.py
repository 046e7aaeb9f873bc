"""Drives the real Python Agent SDK's ClaudeSDKClient (streaming input) through the
claude-watchdog drop-in: after the first result, one control request (REQUEST:
get_context_usage, set_permission_mode or interrupt), awaited as a host does. Reports every
message as one JSON line, the request's outcome ({"event":"request","ok","error","ms"}),
then {"event":"done",...}.

Environment: DROP_IN, WORK_DIR, REQUEST; everything else is passed to the executable.
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
    count = 0
    try:
        async with ClaudeSDKClient(options=options) as client:
            await client.query("Say hello.")
            async for m in client.receive_response():
                count += 1
                name = type(m).__name__
                emit(event="message", type="result" if name == "ResultMessage" else name,
                     subtype=getattr(m, "subtype", None),
                     terminal_reason=getattr(m, "terminal_reason", None))
            t = time.monotonic()
            name = os.environ["REQUEST"]
            try:
                if name == "get_context_usage":
                    await client.get_context_usage()
                elif name == "set_permission_mode":
                    await client.set_permission_mode("default")
                elif name == "interrupt":
                    await client.interrupt()
                else:
                    raise ValueError(f"unknown REQUEST {name}")
                emit(event="request", ok=True, error=None, ms=int((time.monotonic() - t) * 1000))
            except Exception as e:  # noqa: BLE001 - report what the SDK raised
                emit(event="request", ok=False, error=f"{e}", ms=int((time.monotonic() - t) * 1000))
            else:
                emit(event="done", error=None, count=count)
                return
            # What the drop-in sends after its error answer: the synthetic result.
            async for m in client.receive_messages():
                count += 1
                name = type(m).__name__
                emit(event="message", type="result" if name == "ResultMessage" else name,
                     subtype=getattr(m, "subtype", None),
                     terminal_reason=getattr(m, "terminal_reason", None),
                     result=getattr(m, "result", None))
                if name == "ResultMessage":
                    break
    except Exception as e:  # noqa: BLE001
        error = f"{type(e).__name__}: {e}"
    emit(event="done", error=error, count=count)


asyncio.run(main())

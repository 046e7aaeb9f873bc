"""Drives the real Python Agent SDK's query() against the real claude with the subagent plugin
loaded the SDK way (plugins=[{"type": "local", "path": ...}]), and reports each message as one
JSON line on stdout (same shape as plugin_query.mjs):
  {"event":"message","type":…,"subtype":…,"result":…,"send_to":[…],"plugins":[…]}
  {"event":"done","error":null|"…","count":n}

Environment: CLAUDE (the claude binary), PLUGIN_DIR, PROMPT, WORK_DIR; everything else reaches
claude unchanged. With WATCHDOG_HELPER=1 instead of CLAUDE and PLUGIN_DIR: the options are the
installed agent_sdk_watchdog's sdk_options() defaults, nothing else.
"""

import asyncio
import json
import os
import sys

from claude_agent_sdk import ClaudeAgentOptions, query

KINDS = {
    "SystemMessage": "system",
    "AssistantMessage": "assistant",
    "UserMessage": "user",
    "ResultMessage": "result",
    "StreamEvent": "stream_event",
}


def emit(**o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()


async def main():
    if os.environ.get("WATCHDOG_HELPER") == "1":
        from agent_sdk_watchdog import sdk_options

        launch = sdk_options()
    else:
        launch = {
            "cli_path": os.environ["CLAUDE"],
            "env": dict(os.environ),
            "plugins": [{"type": "local", "path": os.environ["PLUGIN_DIR"]}],
        }
    options = ClaudeAgentOptions(
        **launch,
        cwd=os.environ.get("WORK_DIR") or os.getcwd(),
        permission_mode="bypassPermissions",
        stderr=lambda line: sys.stderr.write(line + "\n"),
    )
    count = 0
    error = None
    try:
        prompt = os.environ.get("PROMPT", "Delegate the widget report.")
        async for m in query(prompt=prompt, options=options):
            count += 1
            name = type(m).__name__
            blocks = getattr(m, "content", None)
            send_to = []
            if isinstance(blocks, list):
                for b in blocks:
                    if type(b).__name__ == "ToolUseBlock" and b.name == "SendMessage":
                        send_to.append((b.input or {}).get("to"))
            data = getattr(m, "data", None)
            emit(
                event="message",
                type=KINDS.get(name, name),
                subtype=getattr(m, "subtype", None),
                result=getattr(m, "result", None)
                if isinstance(getattr(m, "result", None), str)
                else None,
                is_error=getattr(m, "is_error", None),
                top_level=getattr(m, "parent_tool_use_id", None) is None,
                send_to=send_to,
                plugins=data.get("plugins") if isinstance(data, dict) else None,
            )
    except Exception as e:  # noqa: BLE001 - report whatever the SDK raised
        error = f"{type(e).__name__}: {e}"
    emit(event="done", error=error, count=count)


asyncio.run(main())

#!/usr/bin/env python3
"""A claude that never answers some of its host's control requests: it runs the real claude
($REAL_CLAUDE) with the arguments it was given and hands it every stdin line except a
`control_request` whose `request.subtype` is in $LOSE (comma-separated), which it drops, as
a CLI whose stdin loop lost the request would. stdout and stderr are the real claude's. The
watchdog's tests put it where the drop-in looks for claude (AGENT_WATCHDOG_CLAUDE).
"""
import json
import os
import subprocess
import sys
import threading

lose = set(filter(None, os.environ.get("LOSE", "").split(",")))
child = subprocess.Popen([os.environ["REAL_CLAUDE"], *sys.argv[1:]], stdin=subprocess.PIPE)


def forward():
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if (
            isinstance(msg, dict)
            and msg.get("type") == "control_request"
            and (msg.get("request") or {}).get("subtype") in lose
        ):
            sys.stderr.write(f"lose_requests: dropped {msg['request']['subtype']}\n")
            continue
        try:
            child.stdin.write(line)
            child.stdin.flush()
        except BrokenPipeError:
            return
    try:
        child.stdin.close()
    except BrokenPipeError:
        pass


threading.Thread(target=forward, daemon=True).start()
sys.exit(child.wait())

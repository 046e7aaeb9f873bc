#!/usr/bin/env python3
"""A tiny stdio MCP server for tests (no dependencies beyond Python 3).

One tool, `wait`, whose behaviour the mode picks:

  answer    answer every call at once
  late:S    answer each call after S seconds (e.g. late:45)
  never     never answer a call (exit on stdin EOF, like most servers)
  noinit    never answer `initialize`
  stubborn  never answer a call, ignore SIGINT, SIGTERM and stdin EOF (only SIGKILL ends it)

Usage: mcp_probe.py MODE [--pidfile FILE] [--tag TEXT]
  --pidfile  write our PID there once started (to check through /proc that we are gone)
  --tag      ignored; lets a test find this process by its command line
Messages are newline-delimited JSON-RPC 2.0 on stdin/stdout (the MCP stdio transport).
"""
import json
import signal
import sys
import threading
import time


def main():
    args = sys.argv[1:]
    if not args:
        sys.stderr.write(__doc__)
        return 2
    mode = args[0]
    pidfile = None
    if "--pidfile" in args:
        i = args.index("--pidfile")
        pidfile = args[i + 1] if i + 1 < len(args) else None
    if pidfile:
        with open(pidfile, "w") as f:
            f.write(str(__import__("os").getpid()))
    late = None
    if mode.startswith("late:"):
        late = float(mode.split(":", 1)[1])
    elif mode not in ("answer", "never", "noinit", "stubborn"):
        sys.stderr.write("mcp_probe: unknown mode %r\n" % mode)
        return 2
    if mode == "stubborn":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    lock = threading.Lock()

    def send(msg):
        data = json.dumps(msg) + "\n"
        with lock:
            try:
                sys.stdout.write(data)
                sys.stdout.flush()
            except (BrokenPipeError, OSError):
                pass

    def reply(rid, result):
        send({"jsonrpc": "2.0", "id": rid, "result": result})

    def answer_call(rid, delay):
        if delay:
            time.sleep(delay)
        text = "wait finished after %.1f s (mode=%s)" % (delay or 0.0, mode)
        reply(rid, {"content": [{"type": "text", "text": text}]})

    for raw in sys.stdin:
        raw = raw.strip()
        if not raw:
            continue
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        method = msg.get("method")
        rid = msg.get("id")
        if rid is None:
            continue  # a notification
        if method == "initialize":
            if mode == "noinit":
                continue
            params = msg.get("params") or {}
            reply(rid, {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcp-probe", "version": "1.0.0"},
            })
        elif method == "tools/list":
            reply(rid, {"tools": [{
                "name": "wait",
                "description": "Waits, then answers (or never does, depending on the server's mode).",
                "inputSchema": {"type": "object", "properties": {}},
            }]})
        elif method == "tools/call":
            if mode == "answer":
                answer_call(rid, 0)
            elif late is not None:
                threading.Thread(target=answer_call, args=(rid, late), daemon=True).start()
            # never / stubborn: no answer
        elif method == "ping":
            reply(rid, {})
        else:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32601, "message": "method not found: %s" % method}})
    # stdin closed
    if mode == "stubborn":
        while True:
            time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())

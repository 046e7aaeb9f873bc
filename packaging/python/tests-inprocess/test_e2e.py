"""End to end: the real Python Agent SDK's query() against the mock Messages API, supervised
in-process (guard(), the hooks, the can_use_tool wrapper). Durations are scaled down (seconds
where a real policy has minutes) so the suite stays fast; the rules are the same."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

import anyio
import pytest

from agent_sdk_watchdog import WatchdogKilled, create_watchdog

from claude_agent_sdk import (  # noqa: E402 - a missing SDK fails here, loudly
    AssistantMessage,
    ClaudeAgentOptions,
    PermissionResultAllow,
    ResultMessage,
    SystemMessage,
    query,
)

BACKENDS = ["asyncio", "trio"]


def options(mock, claude_bin: str, handle, **extra: Any) -> ClaudeAgentOptions:
    kw: Dict[str, Any] = dict(
        cli_path=claude_bin,
        cwd=mock.cwd,
        env=dict(mock.env),
        permission_mode="bypassPermissions",
        include_partial_messages=True,
        hooks=handle.hooks(),
        stderr=lambda line: None,
    )
    kw.update(extra)
    return ClaudeAgentOptions(**kw)


class Run:
    def __init__(self) -> None:
        self.messages: List[Any] = []
        self.killed: Optional[WatchdogKilled] = None
        self.error: Optional[BaseException] = None
        self.t0 = time.monotonic()
        self.t_first: Optional[float] = None
        self.t_end: Optional[float] = None
        self.t_last: Optional[float] = None


async def drive(handle, prompt, opts) -> Run:
    r = Run()
    try:
        async for m in handle.guard(query(prompt=prompt, options=opts)):
            if r.t_first is None:
                r.t_first = time.monotonic()
            r.messages.append(m)
            r.t_last = time.monotonic()
    except WatchdogKilled as e:
        r.killed = e
    except Exception as e:  # noqa: BLE001 - reported by the test
        r.error = e
    r.t_end = time.monotonic()
    return r


def run(backend: str, fn, *args):
    return anyio.run(fn, *args, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_healthy_query_completes(mock, claude_bin, backend):
    m = mock("healthy")
    wd = create_watchdog(idle=5, no_progress=10)
    with wd.register(hard_ceiling=60) as h:
        r = run(backend, drive, h, "Say hello.", options(m, claude_bin, h))
    assert r.error is None and r.killed is None, (r.error, r.killed)
    assert h.kill is None
    assert any(isinstance(x, SystemMessage) and x.subtype == "init" for x in r.messages)
    assert isinstance(r.messages[-1], ResultMessage) and not r.messages[-1].is_error
    assert any(isinstance(x, AssistantMessage) for x in r.messages)
    assert m.claude_processes() == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_ping_only_stall_ends_inside_its_deadline(mock, claude_bin, backend):
    m = mock("ping_only_stall", "--ping-every", "0.5")
    no_progress = 3.0
    wd = create_watchdog(idle=30, no_progress=no_progress)
    kills = []
    with wd.register(hard_ceiling=120, on_kill=kills.append) as h:
        r = run(backend, drive, h, "Say hello.", options(m, claude_bin, h))
    assert r.error is None, r.error
    assert r.killed is not None, f"not killed; {len(r.messages)} messages"
    assert r.killed.kind == "no_progress"
    assert "no progress for 3s" in r.killed.reason
    assert kills == [h.kill] and h.kill.kind == "no_progress"
    # Killed exactly at the deadline: 3 s after the last progress.
    assert abs(h.kill.since_progress - no_progress) < 1e-6
    # The loop ended promptly after the kill (the SDK's close included).
    assert r.t_end - h.kill.at < 3.0, r.t_end - h.kill.at
    # The deadline counts from the last message the host got (the partial text).
    assert abs(h.kill.at - r.t_last - no_progress) < 0.5, h.kill.at - r.t_last
    assert m.claude_processes() == [], "the CLI is still running after the kill"


def test_a_slow_permission_decision_is_not_a_kill(mock, claude_bin):
    m = mock("tool_then_answer")
    wd = create_watchdog(idle=1.5, no_progress=2.5, extend_factor=1)
    asked = []
    with wd.register(hard_ceiling=60) as h:

        async def decide(tool_name, tool_input, context):
            asked.append(tool_name)
            await anyio.sleep(4.0)  # a person deciding, longer than both limits
            return PermissionResultAllow()

        async def prompt():
            yield {"type": "user", "message": {"role": "user", "content": "Write hello.txt, then say hello."}}

        opts = options(m, claude_bin, h, permission_mode="default", can_use_tool=h.can_use_tool(decide))
        r = run("asyncio", drive, h, prompt(), opts)
    assert asked == ["Write"], asked
    assert r.killed is None and r.error is None, (r.killed, r.error)
    assert isinstance(r.messages[-1], ResultMessage) and not r.messages[-1].is_error


def test_a_long_healthy_tool_is_not_an_idle_kill(mock, claude_bin):
    # 9 s of Bash under idle = 3 s: the SDK yields nothing while it runs (no tool_progress
    # reaches a Python host); the hooks say a tool is in flight.
    m = mock("long_tool", "--long-tool", "9")
    wd = create_watchdog(idle=3, no_progress=30, extend_factor=1)
    with wd.register(hard_ceiling=120) as h:
        r = run("asyncio", drive, h, "Run the long command.", options(m, claude_bin, h))
    assert r.killed is None and r.error is None, (r.killed, r.error)
    assert isinstance(r.messages[-1], ResultMessage)
    assert r.t_end - r.t0 >= 9


def test_without_the_hooks_the_same_tool_is_an_idle_kill(mock, claude_bin):
    # The control: the test above can fail.
    m = mock("long_tool", "--long-tool", "9")
    wd = create_watchdog(idle=3, no_progress=30, extend_factor=1)
    with wd.register(hard_ceiling=120) as h:
        r = run("asyncio", drive, h, "Run the long command.", options(m, claude_bin, h, hooks=None))
    assert r.killed is not None and r.killed.kind == "idle", (r.killed, r.error)
    assert m.claude_processes() == []


def test_a_tool_that_never_ends_is_killed_by_the_no_progress_cap(mock, claude_bin):
    m = mock("long_tool", "--long-tool", "600")
    wd = create_watchdog(idle=2, no_progress=6, extend_factor=1)
    with wd.register(hard_ceiling=120) as h:
        r = run("asyncio", drive, h, "Run the long command.", options(m, claude_bin, h))
    assert r.killed is not None and r.killed.kind == "no_progress", (r.killed, r.error)
    assert abs(h.kill.since_progress - 6) < 1e-6
    assert m.claude_processes() == [], "the CLI is still running after the kill"

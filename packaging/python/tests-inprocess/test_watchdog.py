"""register / observe / settle / kill / unregister in virtual time (the clock is injected;
a watchdog with its own clock runs no timer: tick() is the timer), with the SDK's own message
objects."""

import anyio
import pytest

import agent_sdk_watchdog as w
from claude_agent_sdk import (
    AssistantMessage,
    RateLimitEvent,
    RateLimitInfo,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TaskStartedMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

MIN = 60.0


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def watchdog(**kw):
    clock = Clock()
    return w.create_watchdog(now=clock, **kw), clock


def init():
    return SystemMessage(subtype="init", data={"type": "system", "subtype": "init", "session_id": "abc"})


def delta():
    return StreamEvent(uuid="u", session_id="abc", event={"type": "content_block_delta"})


def ping():
    return StreamEvent(uuid="u", session_id="abc", event={"type": "ping"})


def tool_use(name, id="t1"):
    return AssistantMessage(content=[TextBlock(text="x"), ToolUseBlock(id=id, name=name, input={})], model="m")


def tool_result(id="t1", is_error=None):
    return UserMessage(content=[ToolResultBlock(tool_use_id=id, content="ok", is_error=is_error)])


def result(subtype="success", is_error=False):
    return ResultMessage(
        subtype=subtype, duration_ms=1, duration_api_ms=1, is_error=is_error, num_turns=1, session_id="abc"
    )


def test_an_idle_query_is_killed_exactly_at_its_deadline():
    wd, clock = watchdog(idle=10 * MIN, extend_factor=1)
    h = wd.register()
    h.observe(init())
    assert wd.poll_timeout() == pytest.approx(clock.t + 8 * MIN)  # the warn_at (0.8) wake-up
    assert wd.tick(clock.t + 10 * MIN - 0.001) == []
    kills = wd.tick(clock.t + 10 * MIN)
    assert [k.kind for k in kills] == ["idle"] and h.kill == kills[0]
    assert h.kill.at == pytest.approx(clock.t + 10 * MIN) and h.kill.elapsed == pytest.approx(10 * MIN)
    assert wd.tick(clock.t + 11 * MIN) == [], "a kill is reported once"
    h.unregister()
    assert h.kill == kills[0], "the kill stays readable after unregister"


def test_before_the_first_write_patience_is_extended_once_then_the_write_ends_it():
    wd, clock = watchdog(idle=10 * MIN)
    extended = []
    h = wd.register(on_extend=lambda reason, u: extended.append(reason))
    t0 = clock.t
    h.observe(init(), now=t0)
    assert wd.tick(t0 + 15 * MIN) == [] and extended == ["pre_write"]
    h.observe(tool_use("Write"), now=t0 + 16 * MIN)
    h.observe(tool_result(), now=t0 + 16 * MIN)
    kills = wd.tick(t0 + 26 * MIN)
    assert [k.kind for k in kills] == ["idle"]
    assert extended == ["pre_write"], "on_extend runs at most once per query"


def test_stream_events_are_progress_pings_are_keep_alives():
    wd, clock = watchdog(idle=10 * MIN, no_progress=30 * MIN, extend_factor=1)
    h = wd.register()
    t0 = clock.t
    h.observe(delta(), now=t0)
    for s in range(1, 40):  # a ping a minute: alive, but no progress
        h.observe(ping(), now=t0 + s * MIN)
        if h.kill:
            break
        wd.tick(t0 + s * MIN)
    assert h.kill is not None and h.kill.kind == "no_progress"
    assert h.kill.since_progress == pytest.approx(30 * MIN)


def test_a_result_settles_then_only_linger_and_ceiling_apply():
    wd, clock = watchdog(idle=1 * MIN, linger=11 * MIN, extend_factor=1)
    h = wd.register()
    t0 = clock.t
    h.observe(init(), now=t0)
    h.observe(result(), now=t0 + 1)
    assert wd.tick(t0 + 10 * MIN) == []
    kills = wd.tick(t0 + 1 + 11 * MIN)
    assert [k.kind for k in kills] == ["linger"]


def test_settle_by_hand_and_a_new_stream_frame_unsettles():
    wd, clock = watchdog(idle=1 * MIN, extend_factor=1)
    h = wd.register()
    t0 = clock.t
    h.observe(init(), now=t0)
    h.settle(now=t0)
    h.heartbeat(now=t0 + 30)  # a sign of life does not unsettle
    assert wd.tick(t0 + 5 * MIN) == []
    h.stream(now=t0 + 5 * MIN)  # new work
    assert [k.kind for k in wd.tick(t0 + 6 * MIN)] == ["idle"]


def test_the_hard_ceiling_wins():
    wd, clock = watchdog(idle=1 * MIN)
    h = wd.register(hard_ceiling=5 * MIN)
    t0 = clock.t
    for s in range(0, 5 * 60, 10):
        h.observe(delta(), now=t0 + s)
    assert [k.kind for k in wd.tick(t0 + 5 * MIN)] == ["ceiling"]


def test_activity_and_heartbeat_by_hand():
    wd, clock = watchdog(idle=10 * MIN, extend_factor=1)
    h = wd.register()
    t0 = clock.t
    h.activity("Write", now=t0 + 1 * MIN)
    h.heartbeat(now=t0 + 4 * MIN)
    assert wd.tick(t0 + 13 * MIN) == []
    assert [k.kind for k in wd.tick(t0 + 14 * MIN)] == ["idle"]
    assert h.kill.since_tool == pytest.approx(13 * MIN)


def test_unknown_and_future_message_types_count_as_keep_alives():
    class SomethingNew:  # a type a future SDK might yield
        pass

    wd, clock = watchdog(idle=10 * MIN, no_progress=20 * MIN, extend_factor=1)
    h = wd.register()
    t0 = clock.t
    h.observe(delta(), now=t0)
    for s in range(5, 20, 5):
        h.observe(SomethingNew(), now=t0 + s * MIN)
    assert wd.line_counts().get("unknown") == 3, wd.line_counts()
    assert [k.kind for k in wd.tick(t0 + 20 * MIN)] == ["no_progress"]


def test_the_sdks_message_classes_are_read_as_the_core_reads_their_lines():
    wd, clock = watchdog()
    h = wd.register()
    info = RateLimitInfo(status="allowed", raw={"status": "allowed"})
    for m in [
        init(),
        TaskStartedMessage(subtype="task_started", data={}, task_id="t", description="d", uuid="u", session_id="s"),
        delta(),
        ping(),
        tool_use("Bash"),
        tool_result(),
        RateLimitEvent(rate_limit_info=info, uuid="u", session_id="s"),
        result(),
    ]:
        h.observe(m)
    counts = wd.line_counts()
    assert counts == {
        "system": 2, "stream_event": 1, "ping": 1, "assistant": 1, "user": 1,
        "rate_limit_event": 1, "result": 1,
    }, counts


def test_queries_keep_separate_clocks_and_unregister_detaches():
    wd, clock = watchdog(idle=10 * MIN, extend_factor=1)
    t0 = clock.t
    a, b = wd.register(), wd.register()
    a.observe(delta(), now=t0)
    b.observe(delta(), now=t0)
    for s in range(1, 12):
        a.observe(delta(), now=t0 + s * MIN)
    # b's deadline passed while a was fed: the core runs what is due first, at its instant.
    assert b.kill is not None and b.kill.kind == "idle" and b.kill.at == pytest.approx(t0 + 10 * MIN)
    assert a.kill is None and wd.tick(t0 + 11 * MIN) == []
    a.unregister()
    a.observe(delta(), now=t0 + 12 * MIN)  # a detached handle changes nothing
    assert len(wd) == 1
    with wd.register() as c:
        assert len(wd) == 2
    assert len(wd) == 1 and c.kill is None


def test_a_throwing_on_kill_goes_to_on_error_and_the_kill_still_lands():
    errors = []
    clock = Clock()
    wd = w.create_watchdog(idle=1, extend_factor=1, now=clock, on_error=errors.append)
    boom = RuntimeError("boom")

    def on_kill(k):
        raise boom

    h = wd.register(on_kill=on_kill)
    h.observe(init())
    assert [k.kind for k in wd.tick(clock.t + 1)] == ["idle"]
    assert errors == [boom] and h.kill.kind == "idle"


def test_get_utilization_extends_patience_at_high_usage():
    clock = Clock()
    wd = w.create_watchdog(idle=10 * MIN, now=clock, get_utilization=lambda now: 0.95)
    h = wd.register()
    t0 = clock.t
    h.activity("Write", now=t0)  # no pre-write extension any more
    assert wd.tick(t0 + 15 * MIN) == []
    assert [k.kind for k in wd.tick(t0 + 20 * MIN)] == ["idle"]


def run_hook(hook, event, tool_name=None, tool_use_id="t1"):
    data = {"hook_event_name": event, "tool_use_id": tool_use_id}
    if tool_name:
        data["tool_name"] = tool_name
    return anyio.run(hook, data, tool_use_id, None)


def test_the_hook_holds_off_the_idle_rule_while_a_tool_runs():
    wd, clock = watchdog(idle=30, no_progress=10 * MIN, extend_factor=1)
    h = wd.register()
    hook = w.make_watchdog_hook(h)
    t0 = clock.t
    h.observe(init(), now=t0)
    clock.t = t0 + 5
    assert run_hook(hook, "PreToolUse", "Bash") == {}
    # 90 s of a healthy tool and no message: every wake-up finds the tool in flight.
    t = t0 + 5
    while True:
        due = wd.poll_timeout()
        if due is None or due > t0 + 95:
            break
        t = due
        assert wd.tick(t) == [], f"killed at {t - t0}"
    clock.t = t0 + 95
    run_hook(hook, "PostToolUse", "Bash")
    assert h.kill is None
    assert [k.kind for k in wd.tick(t0 + 125)] == ["idle"], "the idle rule is back after the tool"


def test_a_tool_that_never_ends_is_killed_by_the_no_progress_cap():
    wd, clock = watchdog(idle=30, no_progress=5 * MIN, extend_factor=1)
    h = wd.register()
    hook = w.make_watchdog_hook(h)
    t0 = clock.t
    run_hook(hook, "PreToolUse", "Bash")
    kills = []
    while not kills:
        kills = wd.tick(wd.poll_timeout())
    assert kills[0].kind == "no_progress" and kills[0].at == pytest.approx(t0 + 5 * MIN)


def test_only_post_tool_use_passes_the_tool_name():
    for event, write in [("PostToolUse", True), ("PostToolUseFailure", False), ("PreToolUse", False)]:
        wd, clock = watchdog(idle=10 * MIN)
        h = wd.register()
        hook = w.make_watchdog_hook(h)
        t0 = clock.t
        clock.t = t0 + 10
        run_hook(hook, "PreToolUse", "Write")
        if event != "PreToolUse":
            run_hook(hook, event, "Write")
        # A completed write ends the pre-write extension: killed at 10 min, else extended.
        killed = wd.tick(t0 + 10 + 10 * MIN)
        assert bool(killed) == write, event


def test_a_wrapped_can_use_tool_pauses_the_clocks_while_it_runs():
    wd, clock = watchdog(idle=30, no_progress=60, extend_factor=1)
    h = wd.register()
    t0 = clock.t
    h.observe(init(), now=t0)

    async def decide():
        clock.t = t0 + 10
        assert wd.tick(t0 + 10) == []
        clock.t = t0 + 300  # five minutes of a person deciding
        assert wd.tick(t0 + 300) == []
        return "allow"

    assert anyio.run(h.can_use_tool(decide)) == "allow"
    assert h.kill is None
    # The wait began at t0 (the callback's call): 30 s of idle count from its end.
    assert wd.tick(t0 + 300 + 29.9) == []
    assert [k.kind for k in wd.tick(t0 + 300 + 30)] == ["idle"]


def test_sdk_options_route_through_the_drop_in_with_this_policy():
    wd, clock = watchdog(idle=90, no_progress=20 * MIN)
    h = wd.register(hard_ceiling=3600)
    o = h.sdk_options()
    assert o["cli_path"].endswith("claude-watchdog")
    assert o["env"]["AGENT_WATCHDOG_IDLE"] == "90"
    assert o["env"]["AGENT_WATCHDOG_NO_PROGRESS"] == "1200"
    assert o["env"]["AGENT_WATCHDOG_CEILING"] == "3600"
    assert h.sdk_options(idle="5m")["env"]["AGENT_WATCHDOG_IDLE"] == "5m"

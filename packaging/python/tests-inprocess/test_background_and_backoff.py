"""The core's rules for background work and announced back-offs, through the in-process API
with the SDK's own message objects, in virtual time: background tasks outstanding at a
result keep the query working (idle and no-progress run, no linger) until the last one ends;
an announced API back-off (system/api_retry) is counted by neither clock; a kill during a
back-off storm says so."""

import pytest

import agent_sdk_watchdog as w
from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage, TextBlock

MIN = 60.0


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def watchdog(**kw):
    clock = Clock()
    return w.create_watchdog(now=clock, **kw), clock


def system(subtype, **data):
    return SystemMessage(subtype=subtype, data={"type": "system", "subtype": subtype, **data})


def init():
    return system("init", session_id="abc")


def agent_call():
    return AssistantMessage(content=[TextBlock(text="delegating")], model="m")


def agent_work():
    # A background agent's own line: its parent_tool_use_id is the Agent call.
    return AssistantMessage(content=[TextBlock(text="working")], model="m", parent_tool_use_id="toolu_a1")


def listed(*ids):
    return system(
        "background_tasks_changed",
        tasks=[{"task_id": i, "task_type": "local_agent", "description": "probe"} for i in ids],
    )


def result():
    return ResultMessage(
        subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1, session_id="abc"
    )


def kinds(kills):
    return [k.kind for k in kills]


def test_background_work_after_a_result_is_working_not_lingering():
    wd, clock = watchdog(idle=5 * MIN, linger=3 * MIN, no_progress=10 * MIN, extend_factor=1)
    h = wd.register()
    t0 = clock.t
    h.observe(init(), now=t0)
    h.observe(agent_call(), now=t0)
    h.observe(listed("a1"), now=t0)
    h.observe(result(), now=t0 + 1 * MIN)
    # The agent works, a line every 4 minutes (each gap past the 3-minute linger).
    for m in (5, 9, 13):
        assert wd.tick(t0 + m * MIN - 1) == []
        h.observe(agent_work(), now=t0 + m * MIN)
    # Then it wedges: killed 5 minutes after its last line, not waited for, and named for the
    # task it waited on (an idle kill with a task outstanding is task_silent).
    assert wd.tick(t0 + 18 * MIN - 1) == []
    assert kinds(wd.tick(t0 + 18 * MIN)) == ["task_silent"]


def test_when_the_last_task_ends_the_linger_runs_from_then():
    wd, clock = watchdog(idle=5 * MIN, linger=3 * MIN, extend_factor=1)
    h = wd.register()
    t0 = clock.t
    h.observe(init(), now=t0)
    h.observe(system("task_started", task_id="a1", is_backgrounded=True), now=t0)
    h.observe(result(), now=t0 + 1 * MIN)
    h.observe(agent_work(), now=t0 + 4 * MIN)
    h.observe(system("task_notification", task_id="a1", status="completed"), now=t0 + 7 * MIN)
    h.observe(listed(), now=t0 + 7 * MIN)
    assert wd.tick(t0 + 10 * MIN - 1) == []
    assert kinds(wd.tick(t0 + 10 * MIN)) == ["linger"]


def test_an_announced_back_off_is_counted_by_neither_clock():
    wd, clock = watchdog(idle=10 * MIN, no_progress=3, extend_factor=1)
    h = wd.register()
    t0 = clock.t
    h.observe(init(), now=t0)
    h.observe(system("api_retry", attempt=1, retry_delay_ms=8000, error_status=529, error="overloaded"), now=t0 + 1)
    # Before this rule: killed no_progress at 3 s. Now the clocks start at the back-off's end.
    assert wd.tick(t0 + 12 - 0.01) == []
    kills = wd.tick(t0 + 12)
    assert kinds(kills) == ["no_progress"]


def test_a_storm_holds_the_clocks_at_most_max_backoff_and_the_kill_says_so():
    # The core's default max_backoff (2 h): a retry a minute, each announcing 5 minutes.
    wd, clock = watchdog(idle=10 * MIN, no_progress=2 * MIN, extend_factor=1)
    h = wd.register()
    t0 = clock.t
    h.observe(init(), now=t0)
    for m in range(0, 200):
        h.observe(system("api_retry", attempt=m + 1, retry_delay_ms=300000, error_status=529, error="overloaded"),
                  now=t0 + 1 + m * MIN)
        if h.kill:
            break
    assert h.kill is not None and h.kill.kind == "no_progress"
    # The storm's first retry at 1 s: the clocks start 2 h later at the latest.
    assert h.kill.at == pytest.approx(t0 + 1 + 120 * MIN + 2 * MIN)


def test_each_background_task_has_its_own_deadline_and_the_kill_names_it():
    # A task's own progress is its sign of life: it reports every 4 minutes, past the 5-minute
    # idle clock of the session; then it falls silent and the kill names it.
    wd, clock = watchdog(idle=5 * MIN, linger=3 * MIN, no_progress=60 * MIN, extend_factor=1)
    h = wd.register()
    t0 = clock.t
    h.observe(init(), now=t0)
    h.observe(system("task_started", task_id="a1", tool_use_id="toolu_a1", description="Audit the parser",
                     is_backgrounded=True), now=t0)
    h.observe(result(), now=t0 + 1 * MIN)
    for m in (5, 9):
        assert wd.tick(t0 + m * MIN - 1) == []
        h.observe(system("task_progress", task_id="a1", description="Audit the parser"), now=t0 + m * MIN)
    # Its own line (the Agent call's parent_tool_use_id) is a sign of its life too.
    assert wd.tick(t0 + 13 * MIN - 1) == []
    h.observe(agent_work(), now=t0 + 13 * MIN)
    assert wd.tick(t0 + 18 * MIN - 1) == []
    kills = wd.tick(t0 + 18 * MIN)
    assert kinds(kills) == ["task_silent"]
    assert "a1" in kills[0].reason and "Audit the parser" in kills[0].reason

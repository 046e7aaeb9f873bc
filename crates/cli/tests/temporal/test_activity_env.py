"""agent_sdk_watchdog.temporal in Temporal's activity test environment: the fast, deterministic
cases (no server, no claude): which messages heartbeat, what each ending raises, the retry that
resumes once, the refusal, the cancel that closes the query. The SDK's query() is a script of
messages (run_session's ``query=``); the claim and the timeouts run the installed
``agent-watchdog``. Run by scripts/test-fleet in the environment with the built wheel.
"""

import asyncio
import datetime
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from agent_sdk_watchdog import _native
from agent_sdk_watchdog.temporal import AFTER_KILL_PROMPT, ENDINGS, SessionPolicy, run_session


# Stand-ins for the SDK's message classes: run_session reads them by class name and fields.
@dataclass
class SystemMessage:
    subtype: str
    data: Dict[str, Any]


@dataclass
class AssistantMessage:
    content: list
    model: str = "m"
    session_id: Optional[str] = None
    parent_tool_use_id: Optional[str] = None


@dataclass
class UserMessage:
    content: Any
    parent_tool_use_id: Optional[str] = None


@dataclass
class TextBlock:
    text: str


@dataclass
class ToolUseBlock:
    id: str
    name: str
    input: Dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolResultBlock:
    tool_use_id: str
    content: Any = None
    is_error: Optional[bool] = None


@dataclass
class StreamEvent:
    event: Dict[str, Any]


@dataclass
class RateLimitEvent:
    rate_limit_info: Dict[str, Any] = field(default_factory=dict)


@dataclass
class ResultMessage:
    subtype: str
    is_error: bool
    session_id: str
    result: Optional[str] = None
    terminal_reason: Optional[str] = None
    num_turns: int = 1
    total_cost_usd: Optional[float] = None
    stop_reason: Optional[str] = None


SID = "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc"


def success(sid=SID):
    return ResultMessage("success", False, sid, result="done", terminal_reason="completed")


def ours(kind, sid=SID):
    return ResultMessage(
        "error_during_execution", True, sid, result=f"agent-watchdog killed claude ({kind})", terminal_reason=f"watchdog_{kind}"
    )


class Script:
    """query(): yields `messages`, then blocks (if `block`); records its calls and its close."""

    def __init__(self, messages, block=False):
        self.messages = messages
        self.block = block
        self.calls: List[Dict[str, Any]] = []
        self.closed = False

    def __call__(self, prompt, options):
        self.calls.append({"prompt": prompt, "options": options})
        return self._gen()

    async def _gen(self):
        try:
            for m in self.messages:
                yield m
            if self.block:
                await asyncio.Event().wait()
        finally:
            self.closed = True


def env_with(details=None):
    env = ActivityEnvironment()
    if details is not None:
        import dataclasses

        env.info = dataclasses.replace(env.info, heartbeat_details=[details], attempt=2)
    beats: List[Any] = []
    env.on_heartbeat = lambda *d: beats.append(d[0] if d else None)
    return env, beats


def run(env, script, tmp_path, **kw):
    return env.run(
        run_session,
        "do it",
        policy=SessionPolicy(idle="1m", ceiling="10m"),
        cwd=str(tmp_path),
        state_dir=str(tmp_path / "state"),
        claude="/bin/true",
        query=script,
        **kw,
    )


INIT = SystemMessage("init", {"session_id": SID})


TOOL = ToolUseBlock("t1", "Bash")
TOOL_RESULT = ToolResultBlock("t1", "ok")


def test_each_progress_the_core_counts_is_heartbeated_once_confirmed(tmp_path):
    env, beats = env_with()
    script = Script(
        [
            INIT,
            StreamEvent({"type": "ping"}),
            SystemMessage("api_retry", {}),
            RateLimitEvent(),
            AssistantMessage([TOOL], session_id=SID),
            StreamEvent({"type": "ping"}),
            SystemMessage("status", {}),
            UserMessage([TOOL_RESULT]),
            AssistantMessage([TextBlock("done")], session_id=SID),
            success(),
        ]
    )
    out = asyncio.run(run(env, script, tmp_path))
    assert out["result"] == "done" and out["continued"] is False and out["session_id"] == SID
    # init, the tool call, the status, the tool result and the answer: each once the next
    # progress (or the result) shows it was no interruption; pings, the retry and the
    # rate-limit event are keep-alives.
    assert len(beats) == 5, beats
    assert all(b["session_id"] == SID and b["continued"] is False for b in beats)
    assert beats[0]["last_progress"] <= beats[1]["last_progress"]
    # The session went to the drop-in, the policy with it.
    options = script.calls[0]["options"]
    assert options.cli_path.endswith("claude-watchdog")
    assert options.env["AGENT_WATCHDOG_IDLE"] == "1m"


@pytest.mark.parametrize("kind", ["idle", "no_progress", "startup", "output", "ceiling", "linger", "somethingnew"])
def test_each_kill_is_its_typed_error_with_the_kill_as_details(tmp_path, kind):
    env, _ = env_with()
    with pytest.raises(ApplicationError) as e:
        asyncio.run(run(env, Script([INIT, AssistantMessage([], session_id=SID), ours(kind)]), tmp_path))
    error_type, retryable = ENDINGS.get(kind, ("WatchdogKill", True))
    assert e.value.type == error_type
    assert e.value.non_retryable is (not retryable)
    details = e.value.details[0]
    assert details["kill"]["kind"] == kind and "killed" in details["kill"]["reason"]
    assert details["session_id"] == SID


def test_the_interruptions_partial_reply_and_marker_are_no_progress(tmp_path):
    # The watchdog's ladder interrupts claude: it reports its partial reply and the marker.
    env, beats = env_with()
    script = Script(
        [
            INIT,
            AssistantMessage([TOOL], session_id=SID),
            UserMessage([TOOL_RESULT]),
            AssistantMessage([TextBlock("Working on the next ")], session_id=SID),
            UserMessage([TextBlock("[Request interrupted by user]")]),
            ours("idle"),
        ]
    )
    with pytest.raises(ApplicationError):
        asyncio.run(run(env, script, tmp_path))
    # init, the tool call, the tool result; not the partial reply.
    assert len(beats) == 3, beats
    env, beats = env_with()
    only_keepalives = Script(
        [
            INIT,
            StreamEvent({"type": "ping"}),
            AssistantMessage([TextBlock("Thinking about ")], session_id=SID),
            UserMessage("[Request interrupted by user]"),
            ours("no_progress"),
        ]
    )
    with pytest.raises(ApplicationError):
        asyncio.run(run(env, only_keepalives, tmp_path))
    assert len(beats) == 1, beats  # init only


def test_the_ending_is_runs_a_linger_kill_after_a_success_is_the_kill(tmp_path):
    env, _ = env_with()
    with pytest.raises(ApplicationError) as e:
        asyncio.run(run(env, Script([INIT, success(), ours("linger")]), tmp_path))
    assert (e.value.type, e.value.non_retryable) == ("WatchdogLinger", False)
    assert e.value.details[0]["kill"]["kind"] == "linger"
    # A success that stopped on tool_use exited mid-task: incomplete, as run exits 3.
    env, _ = env_with()
    mid_task = ResultMessage("success", False, SID, result="", stop_reason="tool_use")
    with pytest.raises(ApplicationError) as e:
        asyncio.run(run(env, Script([INIT, mid_task]), tmp_path))
    assert (e.value.type, e.value.non_retryable) == ("ClaudeIncomplete", False)


def test_an_error_result_and_no_result_are_typed_too(tmp_path):
    env, _ = env_with()
    cut = ResultMessage("success", True, SID, terminal_reason="api_error")
    with pytest.raises(ApplicationError) as e:
        asyncio.run(run(env, Script([INIT, cut]), tmp_path))
    assert (e.value.type, e.value.non_retryable) == ("ClaudeErrorResult", True)
    env, _ = env_with()
    with pytest.raises(ApplicationError) as e:
        asyncio.run(run(env, Script([INIT]), tmp_path))
    assert (e.value.type, e.value.non_retryable) == ("ClaudeNoResult", False)


def test_a_retry_resumes_the_same_session_once_and_never_twice(tmp_path):
    sid = str(uuid.uuid4())
    details = {"session_id": sid, "last_progress": 1.0, "continued": False}
    env, beats = env_with(details)
    script = Script(
        [SystemMessage("init", {"session_id": sid}), AssistantMessage([], session_id=sid), UserMessage([]), success(sid)]
    )
    out = asyncio.run(run(env, script, tmp_path))
    assert out["continued"] is True and out["session_id"] == sid
    call = script.calls[0]
    assert call["prompt"] == AFTER_KILL_PROMPT
    assert call["options"].resume == sid
    assert beats and all(b["continued"] is True for b in beats)
    # The marker is claimed: another attempt with the same details (its progress never
    # reached the server) is refused, and runs nothing.
    env, _ = env_with(details)
    again = Script([success(sid)])
    with pytest.raises(ApplicationError) as e:
        asyncio.run(run(env, again, tmp_path))
    assert (e.value.type, e.value.non_retryable) == ("ContinuationRefused", True)
    assert again.calls == []
    # Details that say it was continued: refused without asking the ledger.
    env, _ = env_with({**details, "continued": True})
    with pytest.raises(ApplicationError) as e:
        asyncio.run(run(env, Script([]), tmp_path / "elsewhere"))
    assert e.value.type == "ContinuationRefused"


def test_an_unusable_ledger_fails_closed_and_retryable(tmp_path):
    env, _ = env_with({"session_id": str(uuid.uuid4()), "continued": False})
    script = Script([success()])
    with pytest.raises(ApplicationError) as e:
        asyncio.run(run(env, script, tmp_path, ledger="redis://u:Pa55-w0rd-x@127.0.0.1:1/0"))
    assert (e.value.type, e.value.non_retryable) == ("LedgerUnavailable", False)
    assert "Pa55-w0rd-x" not in e.value.message and "Pa55-w0rd-x" not in str(e.value.details)
    assert script.calls == []


def test_a_cancel_closes_the_query(tmp_path):
    env, beats = env_with()
    script = Script([INIT, AssistantMessage([], session_id=SID), UserMessage([])], block=True)

    async def go():
        task = asyncio.ensure_future(run(env, script, tmp_path))
        while not beats:
            await asyncio.sleep(0)
        env.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert script.closed, "the SDK's query was closed (so it ends the drop-in and its tree)"


def test_the_timeouts_are_derived_from_the_policy():
    t = SessionPolicy(idle="5m", no_progress="20m", startup="3m", ceiling="2h", grace="2s", margin="1m").activity_options()
    # max(3m, 5m x 2, 20m) + 2s + 1m; 2h + 2s + 1m.
    assert t["heartbeat_timeout"] == datetime.timedelta(minutes=21, seconds=2)
    assert t["start_to_close_timeout"] == datetime.timedelta(hours=2, minutes=1, seconds=2)
    with pytest.raises(ValueError, match="ceiling"):
        SessionPolicy().activity_options()
    with pytest.raises(ValueError, match="idle: must be a duration > 0"):
        SessionPolicy(idle="0s", ceiling="1h").activity_options()
    # A bad variable of the worker's environment, as the drop-in would refuse it.
    env = SessionPolicy(ceiling="1h").session_env({"AGENT_WATCHDOG_NO_PROGRESS": "soon"})
    with pytest.raises(ValueError, match="AGENT_WATCHDOG_NO_PROGRESS"):
        _native.activity_timeouts(env, 60.0)

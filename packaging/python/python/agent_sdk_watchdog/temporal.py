"""One Claude session as a Temporal activity, under the watchdog (docs/fleets.md).

Needs ``temporalio`` and ``claude-agent-sdk``; importing ``agent_sdk_watchdog`` never imports
them (this module is loaded only when you import it)::

    from temporalio import activity
    from agent_sdk_watchdog.temporal import SessionPolicy, run_session

    POLICY = SessionPolicy(idle="5m", no_progress="20m", ceiling="2h")

    @activity.defn
    async def fix_tests(prompt: str) -> dict:
        return await run_session(prompt, policy=POLICY, cwd="/work/repo")

    # Where the workflow is started (not in workflow code: it runs a command):
    # POLICY.activity_options() -> {"heartbeat_timeout": …, "start_to_close_timeout": …},
    # passed to the workflow, which gives them to workflow.execute_activity.

The full recipe (workflow, activity, worker) is ``examples/temporal/`` and ``docs/fleets.md``.

The session runs through the drop-in (``claude-watchdog`` as the SDK's ``cli_path``, see
:func:`agent_sdk_watchdog.sdk_options`): the watchdog ends a stalled session with its ladder and
stops the whole process tree, and a guardian stops it even if the worker is SIGKILLed.

- **Heartbeats only on progress**: when the conversation moves (an ``assistant`` or ``user``
  message: a model turn, a tool result), never on keep-alives (pings, ``tool_progress``,
  rate-limit events, retries, status). Details: ``{"session_id", "last_progress", "continued"}``
  (``last_progress``: epoch seconds of the last progress).
- **Retries resume, once**: an attempt that finds the details of an earlier one resumes that
  session (``--resume``) with a continuation prompt, after claiming the session's marker in the
  ledger (``agent-watchdog claim``, the same marker ``run --resume-after-kill`` uses; pass
  ``ledger=`` / ``AGENT_WATCHDOG_LEDGER`` for a fleet). An attempt that finds the session already
  continued ends with the non-retryable ``ContinuationRefused``.
- **Cancellation** (delivered by Temporal with a heartbeat's answer) sends the activity's drop-in
  SIGTERM at once (found by a tag in its environment, on Linux) and closes the SDK's query: the
  drop-in's ladder stops the whole tree within its grace (at most 2 s).
- **Each ending is a typed** ``ApplicationError`` (:data:`ENDINGS`), the kill as its details.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from temporalio import activity
from temporalio.exceptions import ApplicationError

from . import Duration, _duration, cli_path, sdk_options, watchdog_env, watchdog_kill

__all__ = [
    "AFTER_KILL_PROMPT",
    "ENDINGS",
    "SessionPolicy",
    "application_error",
    "run_session",
]

AFTER_KILL_PROMPT = (
    "The previous run was stopped because it stopped making progress. Continue the unfinished "
    "task from where it stopped, without recap."
)
"""The prompt a retried attempt resumes the session with (the watchdog's own, for ``run``)."""

ENDINGS: Dict[str, Tuple[str, bool]] = {
    "idle": ("WatchdogIdle", True),
    "no_progress": ("WatchdogNoProgress", True),
    "startup": ("WatchdogStartup", True),
    "output": ("WatchdogOutput", True),
    "linger": ("WatchdogLinger", True),
    "ceiling": ("WatchdogCeiling", False),
    "error_result": ("ClaudeErrorResult", False),
    "refused": ("ContinuationRefused", False),
    "ledger": ("LedgerUnavailable", True),
    "no_result": ("ClaudeNoResult", True),
}
"""Each ending: the ``ApplicationError`` type and whether Temporal may retry it.

Retryable: the watchdog's ``idle``, ``no_progress``, ``startup``, ``output`` (the host's output
went away) and ``linger`` kills, a ledger that cannot be reached, a session that ended without
a result. Non-retryable: the ``ceiling``, an error result of Claude Code's own, and a refused
continuation (the session was already continued once)."""


@dataclass(frozen=True)
class SessionPolicy:
    """The watchdog's policy for the session, and the activity timeouts it implies.

    The same values go to the drop-in (:meth:`sdk_policy`) and into the timeouts
    (:meth:`activity_options`), so Temporal never gives up on a session the watchdog still
    lets run, and never waits much longer than it would.
    """

    idle: Duration = "10m"
    no_progress: Duration = "30m"
    startup: Duration = "3m"
    ceiling: Optional[Duration] = None
    extend_factor: float = 2.0
    grace: Duration = "2s"
    margin: Duration = "1m"
    """Added to each timeout: the drop-in's kill ladder, the SDK's close, a slow worker."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """More :func:`agent_sdk_watchdog.sdk_options` policy arguments (``linger``, ``write_tools``…)."""

    def sdk_policy(self) -> Dict[str, Any]:
        """The :func:`agent_sdk_watchdog.sdk_options` arguments of this policy."""
        policy: Dict[str, Any] = dict(self.extra)
        policy.update(
            idle=self.idle,
            no_progress=self.no_progress,
            startup=self.startup,
            extend_factor=self.extend_factor,
            grace=self.grace,
        )
        if self.ceiling is not None:
            policy["ceiling"] = self.ceiling
        return policy

    def timeouts(self) -> Dict[str, Optional[datetime.timedelta]]:
        """``heartbeat_timeout`` and ``start_to_close_timeout`` of this policy, by
        ``agent-watchdog timeouts`` (the one rule, for both helpers):

        - ``heartbeat_timeout``: the longest a healthy session goes without progress under the
          policy, ``max(startup, idle × extend_factor, no_progress)``, plus the grace and the
          margin. Past it the watchdog has ended the session already: a heartbeat timeout
          means the worker itself is gone.
        - ``start_to_close_timeout``: the ceiling plus the grace and the margin (``None``
          without a ceiling).

        The policy is read as the drop-in reads it: these fields over the worker's own
        ``AGENT_WATCHDOG_*`` variables.
        """
        env = dict(os.environ)
        env.update(watchdog_env(**self.sdk_policy()))
        argv = [cli_path("agent-watchdog"), "timeouts", "--margin", _duration("margin", self.margin, allow_zero=True)]
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode != 0:
            raise ValueError(f"invalid watchdog policy: {done.stderr.strip()}")
        answer = json.loads(done.stdout)
        stc = answer.get("start_to_close_timeout_ms")
        return {
            "heartbeat_timeout": datetime.timedelta(milliseconds=answer["heartbeat_timeout_ms"]),
            "start_to_close_timeout": None if stc is None else datetime.timedelta(milliseconds=stc),
        }

    def activity_options(self) -> Dict[str, datetime.timedelta]:
        """``heartbeat_timeout`` and ``start_to_close_timeout`` for
        ``workflow.execute_activity(..., **policy.activity_options())``; a policy without a
        ceiling has no start-to-close bound (``ValueError``: set ``ceiling=``)."""
        t = self.timeouts()
        if t["start_to_close_timeout"] is None:
            raise ValueError(
                "start_to_close_timeout needs a ceiling: SessionPolicy(ceiling='2h') bounds every "
                "attempt, and the timeout is that plus the grace and the margin"
            )
        return {"heartbeat_timeout": t["heartbeat_timeout"], "start_to_close_timeout": t["start_to_close_timeout"]}


def application_error(ending: str, message: str, details: Mapping[str, Any]) -> ApplicationError:
    """The typed error of ``ending`` (a key of :data:`ENDINGS`) with ``details`` as its
    single detail."""
    # A kill kind this version does not know: retryable, as a stall is.
    error_type, retryable = ENDINGS.get(ending, ("WatchdogKill", True))
    return ApplicationError(message, dict(details), type=error_type, non_retryable=not retryable)


def _previous(details: Iterable[Any]) -> Optional[Dict[str, Any]]:
    """The progress details an earlier attempt left, if they name a session."""
    for d in details:
        if isinstance(d, dict) and isinstance(d.get("session_id"), str) and d["session_id"]:
            return d
    return None


async def _claim(session_id: str, ledger: Optional[str], state_dir: Optional[str], prompt: str, env: Mapping[str, str]) -> Dict[str, Any]:
    """``agent-watchdog claim``: the session's continuation marker, at most once anywhere."""
    argv = [cli_path("agent-watchdog"), "claim", session_id, "--prompt", prompt]
    if ledger:
        argv += ["--ledger", ledger]
    if state_dir:
        argv += ["--state-dir", os.fspath(state_dir)]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
    )
    out, err = await proc.communicate()
    try:
        answer = json.loads(out.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        answer = {"claimed": False, "error": err.decode("utf-8", "replace").strip() or f"agent-watchdog claim exited {proc.returncode}"}
    return answer


_TAG_VAR = "AGENT_SDK_WATCHDOG_ACTIVITY"
"""Marks the drop-in of one activity in its environment, so a cancel finds it at once."""


def _tagged_children(tag: str) -> List[int]:
    """This process's children whose environment carries ``_TAG_VAR=tag`` (Linux: ``/proc``;
    elsewhere none, and the SDK's own close ends the drop-in)."""
    me = os.getpid()
    mark = f"{_TAG_VAR}={tag}".encode()
    found = []
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mark in f.read().split(b"\0"):
                    found.append(int(pid))
        except (OSError, ValueError, IndexError):
            continue
    return found


async def _stop_on_cancel(tag: str) -> None:
    """On the activity's cancel, SIGTERM its drop-in at once: the drop-in's ladder then ends the
    whole tree within its grace. (The Python SDK's own close waits 5 s after closing stdin
    before its SIGTERM.)"""
    await activity.wait_for_cancelled()
    for pid in _tagged_children(tag):
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass


def _kind(message: Any) -> str:
    return type(message).__name__


_INTERRUPTED = "[Request interrupted"
"""How Claude Code marks a turn it stopped on an interrupt (the watchdog's ladder starts with
one): ``[Request interrupted by user]``, ``… for tool use]``."""


def _texts(content: Any) -> Iterable[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            for key in ("text", "content"):
                value = block.get(key) if isinstance(block, dict) else getattr(block, key, None)
                if isinstance(value, (str, list)):
                    yield from _texts(value)


def _interrupted(message: Any) -> bool:
    """A user message that says the turn was interrupted: the end of a stopped turn, not progress."""
    return any(t.lstrip().startswith(_INTERRUPTED) for t in _texts(getattr(message, "content", None)))


async def run_session(
    prompt: str,
    *,
    policy: Optional[SessionPolicy] = None,
    cwd: Optional[Union[str, os.PathLike]] = None,
    ledger: Optional[str] = None,
    state_dir: Optional[Union[str, os.PathLike]] = None,
    continue_prompt: str = AFTER_KILL_PROMPT,
    env: Optional[Dict[str, str]] = None,
    options: Optional[Dict[str, Any]] = None,
    claude: Optional[Union[str, os.PathLike]] = None,
    on_heartbeat: Optional[Callable[[Dict[str, Any]], None]] = None,
    query: Optional[Callable[..., Any]] = None,
) -> Dict[str, Any]:
    """Run one Claude session inside the current activity, under the watchdog.

    Returns ``{"session_id", "result", "continued", "num_turns", "total_cost_usd"}`` for a
    session that succeeds; every other ending raises its typed ``ApplicationError``
    (:data:`ENDINGS`, the kill or the result as details). ``ledger`` (else
    ``AGENT_WATCHDOG_LEDGER``) names the shared ledger every worker of the fleet uses for the
    continue-once marker; without one, the state directory (``state_dir``, else the default)
    of this machine. ``options``: more ``ClaudeAgentOptions`` fields (``permission_mode``,
    ``allowed_tools``…). ``on_heartbeat`` sees each heartbeat's details (for logs and tests);
    ``query`` stands in for ``claude_agent_sdk.query`` (a wrapper of yours, or a test's).
    """
    from claude_agent_sdk import ClaudeAgentOptions  # lazily: only inside a worker

    if query is None:
        from claude_agent_sdk import query

    policy = policy or SessionPolicy()
    ledger = ledger or os.environ.get("AGENT_WATCHDOG_LEDGER") or None
    session_env: Dict[str, str] = dict(env or {})
    if ledger:
        # The plugin's hook (a subagent's continue-once) keeps its markers there too.
        session_env["AGENT_WATCHDOG_LEDGER"] = ledger
    info = activity.info()
    previous = _previous(info.heartbeat_details)
    continued = False
    session_id: Optional[str] = None
    last_progress: Optional[float] = None
    if previous is not None:
        session_id = previous["session_id"]
        last_progress = previous.get("last_progress")
        facts = {"session_id": session_id, "attempt": info.attempt, "last_progress": last_progress}
        if previous.get("continued"):
            raise application_error(
                "refused",
                f"session {session_id} was already continued once: not continuing it again",
                facts,
            )
        answer = await _claim(session_id, ledger, os.fspath(state_dir) if state_dir else None, continue_prompt, {**os.environ, **session_env})
        if answer.get("error"):
            raise application_error(
                "ledger",
                f"cannot claim the continuation of session {session_id}: {answer['error']}",
                {**facts, "error": answer["error"]},
            )
        if not answer.get("claimed"):
            raise application_error(
                "refused",
                f"session {session_id}: {answer.get('reason', 'already continued')}",
                facts,
            )
        continued = True

    tag = uuid.uuid4().hex
    sdk = sdk_options(env={**session_env, _TAG_VAR: tag}, claude=claude, **policy.sdk_policy())
    fields: Dict[str, Any] = dict(options or {})
    fields.update(sdk)
    if cwd is not None:
        fields["cwd"] = os.fspath(cwd)
    if continued:
        fields["resume"] = session_id
    agent_options = ClaudeAgentOptions(**fields)

    def heartbeat(at: float) -> None:
        details = {"session_id": session_id, "last_progress": at, "continued": continued}
        activity.heartbeat(details)
        if on_heartbeat is not None:
            on_heartbeat(details)

    # A progress message is heartbeated when the next message shows it was not the start of an
    # interruption (the watchdog's ladder begins with one: Claude Code then reports its partial
    # reply and "[Request interrupted by user]", which are the end of a stall, not progress).
    pending: Optional[float] = None

    kill = None
    result = None
    stream = query(prompt=continue_prompt if continued else prompt, options=agent_options)
    watcher = asyncio.ensure_future(_stop_on_cancel(tag))
    try:
        async for message in stream:
            kind = _kind(message)
            if kind == "SystemMessage" and getattr(message, "subtype", None) == "init":
                sid = (getattr(message, "data", None) or {}).get("session_id")
                if isinstance(sid, str) and sid:
                    session_id = sid
            elif kind in ("AssistantMessage", "UserMessage"):
                if kind == "UserMessage" and _interrupted(message):
                    pending = None
                    continue
                # The conversation moved: a model turn or a tool result.
                if pending is not None and session_id:
                    heartbeat(pending)
                sid = getattr(message, "session_id", None)
                if isinstance(sid, str) and sid:
                    session_id = sid
                last_progress = pending = time.time()
            elif kind == "ResultMessage":
                pending = None
                ours = watchdog_kill(message)
                if ours is not None:
                    kill = kill or ours
                elif result is None:
                    result = message
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - the SDK raises after an error result too (ours included)
        if result is None and kill is None:
            raise
    finally:
        watcher.cancel()
        # Cancelled or not: close the query, so the SDK ends the drop-in (and its tree).
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await asyncio.shield(aclose())

    facts: Dict[str, Any] = {"session_id": session_id, "continued": continued, "attempt": info.attempt}
    succeeded = result is not None and not getattr(result, "is_error", False) and getattr(result, "subtype", None) == "success"
    # A session that succeeded and then stayed open (a `linger` kill) did its work.
    if kill is not None and not succeeded:
        raise application_error(
            kill.kind, f"watchdog {kill.kind}: {kill.reason}", {**facts, "kill": {"kind": kill.kind, "reason": kill.reason}}
        )
    if result is None:
        raise application_error("no_result", "the session ended without a result", facts)
    if not succeeded:
        raise application_error(
            "error_result",
            f"the session ended with an error result ({getattr(result, 'subtype', None)})",
            {
                **facts,
                "subtype": getattr(result, "subtype", None),
                "terminal_reason": getattr(result, "terminal_reason", None),
                "result": getattr(result, "result", None),
            },
        )
    return {
        **facts,
        "result": getattr(result, "result", None),
        "num_turns": getattr(result, "num_turns", None),
        "total_cost_usd": getattr(result, "total_cost_usd", None),
    }

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

- **Heartbeats while the watchdog lets the session run**: on a timer (a quarter of the
  activity's heartbeat timeout, at most 30 s) and on each progress, for as long as the Rust
  core, under the drop-in's policy, says the session is alive or held (a busy tool, an
  announced back-off Claude Code waits out in silence, an MCP call, a human wait), so Temporal
  never times out a session the watchdog lets run, and notices a dead worker within the
  heartbeat timeout. When the core says the drop-in should have ended the session and it did
  not, the heartbeats stop. Details: ``{"session_id", "last_progress", "continued"}``
  (``last_progress``: epoch seconds of the last progress the core counts, or ``None``).
- **Retries resume, once**: an attempt that finds the details of an earlier one resumes that
  session (``--resume``) with a continuation prompt, after claiming the session's marker in the
  ledger (``agent-watchdog claim``, the same marker ``run --resume-after-kill`` uses; pass
  ``ledger=`` / ``AGENT_WATCHDOG_LEDGER`` for a fleet). An attempt that finds the session already
  continued ends with the non-retryable ``ContinuationRefused``.
- **Cancellation** (delivered by Temporal with a heartbeat's answer) sends the activity's drop-in
  SIGTERM at once (found by a tag in its environment, on Linux) and closes the SDK's query: the
  drop-in's ladder stops the whole tree within its grace (at most 2 s).
- **Each ending is a typed** ``ApplicationError`` (:data:`ENDINGS`), the kill as its details:
  the ending ``agent-watchdog run`` reports for the same stream (a ``linger`` kill after a
  success is the kill; a success that stopped on ``tool_use`` is ``incomplete``).

The rules (the session's fold, the endings, the timeouts, the continuation prompt) are the Rust
core's, through the extension; this module is the SDK loop around them.
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

from . import Duration, _native, cli_path, sdk_options, watchdog_env
from ._durations import _seconds

__all__ = [
    "AFTER_KILL_PROMPT",
    "ENDINGS",
    "SessionPolicy",
    "application_error",
    "run_session",
]

_TABLES = _native.rules_tables()

AFTER_KILL_PROMPT: str = _TABLES["after_kill_prompt"]
"""The prompt a retried attempt resumes the session with (the watchdog's own, for ``run``)."""

ENDINGS: Dict[str, Tuple[str, bool]] = dict(_TABLES["failures"])
"""Each ending: the ``ApplicationError`` type and whether Temporal may retry it (the core's
table). Retried: a stall (``idle``, ``no_progress``, ``linger``), ``startup``, ``output``, a
ledger that cannot be reached, a session without a usable result (``no_result``,
``incomplete``). Not retried: the ``ceiling``, an error result of Claude Code's own, a refused
continuation. Any other kill: ``WatchdogKill``, retried."""


@dataclass(frozen=True)
class SessionPolicy:
    """The watchdog's policy for the session, and the activity timeouts it implies.

    The same values go to the drop-in (:meth:`sdk_policy`) and into the timeouts
    (:meth:`activity_options`). A field left ``None`` is the worker's own
    ``AGENT_WATCHDOG_*`` variable, else the watchdog's default (docs/cli.md).
    """

    idle: Optional[Duration] = None
    no_progress: Optional[Duration] = None
    startup: Optional[Duration] = None
    ceiling: Optional[Duration] = None
    extend_factor: Optional[float] = None
    grace: Optional[Duration] = None
    margin: Duration = "1m"
    """Added to each timeout: the drop-in's kill ladder, the SDK's close, a slow worker."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """More :func:`agent_sdk_watchdog.sdk_options` policy arguments (``linger``,
    ``busy_cap``, ``max_backoff``, ``write_tools``…)."""

    def sdk_policy(self) -> Dict[str, Any]:
        """The :func:`agent_sdk_watchdog.sdk_options` arguments of this policy."""
        policy: Dict[str, Any] = dict(self.extra)
        for key in ("idle", "no_progress", "startup", "ceiling", "extend_factor", "grace"):
            if getattr(self, key) is not None:
                policy[key] = getattr(self, key)
        return policy

    def session_env(self, env: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        """The environment the drop-in reads the policy from: these fields over ``env`` (the
        worker's, by default)."""
        merged = dict(os.environ if env is None else env)
        merged.update(watchdog_env(**self.sdk_policy()))
        return merged

    def timeouts(self) -> Dict[str, Optional[datetime.timedelta]]:
        """``heartbeat_timeout`` and ``start_to_close_timeout`` of this policy (the core's
        rule, the one ``agent-watchdog timeouts`` prints):

        - ``heartbeat_timeout``: the longest a healthy session that holds nothing goes quiet
          under the policy, ``max(startup, idle × extend_factor, no_progress)``, plus the grace
          and the margin. :func:`run_session` heartbeats through every hold, so this is how
          late a worker that died is noticed at most.
        - ``start_to_close_timeout``: the ceiling plus the grace and the margin (``None``
          without a ceiling).
        """
        try:
            hb, stc = _native.activity_timeouts(self.session_env(), _seconds("margin", self.margin))
        except ValueError as e:
            raise ValueError(str(e)) from None
        return {
            "heartbeat_timeout": datetime.timedelta(seconds=hb),
            "start_to_close_timeout": None if stc is None else datetime.timedelta(seconds=stc),
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
    error_type, retryable = ENDINGS.get(ending, tuple(_TABLES["fallback"]))
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


def _beat_every(info: Any) -> float:
    """The heartbeat timer's period: a quarter of the heartbeat timeout, at most 30 s."""
    timeout = getattr(info, "heartbeat_timeout", None)
    if not timeout:
        return 30.0
    return min(max(timeout.total_seconds() / 4, 0.05), 30.0)


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
    if previous is not None:
        session_id = previous["session_id"]
        facts = {"session_id": session_id, "attempt": info.attempt, "last_progress": previous.get("last_progress")}
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
    # The session's fold, under the policy the drop-in reads (its environment over the worker's).
    run = _native.SdkRun({**os.environ, **sdk["env"]}, _seconds("margin", policy.margin), time.monotonic(), time.time())
    ask = fields.get("can_use_tool")
    if ask is not None:
        # The SDK answers Claude Code's permission request itself: the callback is a human wait.
        async def asked(*args: Any, **kwargs: Any) -> Any:
            wait = run.permission_asked(time.monotonic())
            try:
                return await ask(*args, **kwargs)
            finally:
                run.permission_answered(wait, time.monotonic())

        fields["can_use_tool"] = asked
    agent_options = ClaudeAgentOptions(**fields)

    def heartbeat() -> None:
        details = {"session_id": run.session_id or session_id, "last_progress": run.last_progress, "continued": continued}
        activity.heartbeat(details)
        if on_heartbeat is not None:
            on_heartbeat(details)

    async def beat_while_alive() -> None:
        every = _beat_every(info)
        while True:
            await asyncio.sleep(every)
            if not run.alive(time.monotonic()):
                return  # the watchdog should have ended it: let the heartbeat timeout say so
            heartbeat()

    result = None
    failed: Optional[BaseException] = None
    stream = query(prompt=continue_prompt if continued else prompt, options=agent_options)
    watcher = asyncio.ensure_future(_stop_on_cancel(tag))
    beats = asyncio.ensure_future(beat_while_alive())
    try:
        async for message in stream:
            progress, _, kill = run.observe(message, time.monotonic())
            if progress:
                heartbeat()
            if not kill and type(message).__name__ == "ResultMessage":
                result = message
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - the SDK raises after an error result too (ours included)
        failed = e
    finally:
        watcher.cancel()
        beats.cancel()
        # Cancelled or not: close the query, so the SDK ends the drop-in (and its tree).
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await asyncio.shield(aclose())

    if failed is not None and result is None and run.kill is None:
        raise failed
    ending = run.finish(time.monotonic())
    facts: Dict[str, Any] = {"session_id": run.session_id or session_id, "continued": continued, "attempt": info.attempt}
    if ending["kill"] is not None:
        kind, reason = ending["kill"]
        raise application_error(ending["end"], ending["message"], {**facts, "kill": {"kind": kind, "reason": reason}})
    if result is not None and ending["failure"] is not None:
        facts.update({k: getattr(result, k, None) for k in ("subtype", "terminal_reason", "result")})
    if ending["failure"] is not None:
        raise application_error(ending["end"], ending["message"], facts)
    return {
        **facts,
        "result": getattr(result, "result", None),
        "num_turns": getattr(result, "num_turns", None),
        "total_cost_usd": getattr(result, "total_cost_usd", None),
    }

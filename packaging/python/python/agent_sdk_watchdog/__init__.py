"""agent-sdk-watchdog: every Claude Code / Agent SDK session ends, for a reason you can read.

This package installs two executables: ``agent-watchdog`` (run, replay, audit, demo) and
``claude-watchdog``, a drop-in for ``claude`` under the Agent SDK. The helpers below wire the
drop-in into ``ClaudeAgentOptions`` in one call::

    from claude_agent_sdk import ClaudeAgentOptions, query
    from agent_sdk_watchdog import sdk_options

    options = ClaudeAgentOptions(**sdk_options(idle="5m", no_progress="20m"), cwd="...")

``cli_path`` is the installed ``claude-watchdog``; ``env`` carries the policy as
``AGENT_WATCHDOG_*`` variables (the Python SDK merges ``env`` over the inherited
environment), and the real ``claude`` the drop-in runs: the one the SDK would have run itself
(the installed ``claude_agent_sdk``'s bundled binary, else ``claude`` on ``PATH``), or
``claude=``. ``plugins`` loads this package's Claude Code plugin (a subagent cut off by the
output limit is continued once). :func:`watchdog_kill` reads the watchdog's final result.
"""

from __future__ import annotations

import datetime
import importlib
import importlib.util
import os
import shutil
import sys
import sysconfig
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Literal, NamedTuple, Optional, TypedDict, Union

__all__ = [
    "Duration",
    "SdkOptions",
    "SdkPlugin",
    "WatchdogKill",
    "cli_path",
    "plugin_path",
    "sdk_claude",
    "watchdog_env",
    "sdk_options",
    "watchdog_kill",
]

Duration = Union[str, int, float, datetime.timedelta]
"""A duration: ``"90s"``, ``"10m"``, ``"1h30m"``, a number of seconds, or a ``timedelta``."""


class SdkPlugin(TypedDict):
    """A local plugin, as ``ClaudeAgentOptions.plugins`` takes it."""

    type: Literal["local"]
    path: str


class SdkOptions(TypedDict):
    """The ``ClaudeAgentOptions`` fields that route a session through the watchdog."""

    cli_path: str
    env: Dict[str, str]
    plugins: List[SdkPlugin]


class WatchdogKill(NamedTuple):
    """What :func:`watchdog_kill` read from the watchdog's final ``result``."""

    kind: str
    """``idle``, ``no_progress``, ``startup``, ``linger`` or ``ceiling``."""
    reason: str
    """One sentence: what was killed and why."""


def _exe(name: str) -> str:
    return name + (".exe" if sys.platform == "win32" else "")


def cli_path(name: str = "claude-watchdog") -> str:
    """The path of an executable this package installed (``claude-watchdog`` by default).

    Looks in this installation's scripts directory (the virtual environment's ``bin``, or the
    user scheme's), then on ``PATH``. Raises ``FileNotFoundError`` when it is nowhere.
    """
    if name not in ("claude-watchdog", "agent-watchdog"):
        raise ValueError(f"unknown executable {name!r}: expected claude-watchdog or agent-watchdog")
    exe = _exe(name)
    dirs = [sysconfig.get_path("scripts")]
    user_scheme = "nt_user" if os.name == "nt" else "posix_user"
    if user_scheme in sysconfig.get_scheme_names():
        dirs.append(sysconfig.get_path("scripts", user_scheme))
    for d in dirs:
        candidate = os.path.join(d, exe)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(exe)
    if found:
        return found
    raise FileNotFoundError(_no_binary(exe, dirs))


def _no_binary(exe: str, dirs: List[str]) -> str:
    """One line: which binary is missing, whether this platform has any, what still works."""
    import platform

    machine = platform.machine().lower()
    built_here = sys.platform.startswith("linux") and machine in ("x86_64", "amd64", "aarch64", "arm64")
    why = (
        ""
        if built_here
        else f"; agent-sdk-watchdog's binaries are built for {BINARY_PLATFORMS} only, not {sys.platform} {machine}"
    )
    return (
        f"{exe} is not installed here (looked in {', '.join(dirs)} and on PATH){why}: "
        "the in-process API (create_watchdog, create_rate_limit_monitor) works without it"
    )


BINARY_PLATFORMS = "Linux x86-64 and arm64 (glibc or musl)"
"""Where the wheel carries ``agent-watchdog`` and ``claude-watchdog``; elsewhere (macOS,
Windows) it carries the in-process API only."""


def sdk_claude() -> str:
    """The ``claude`` the Agent SDK would run without the watchdog, found the way it finds it.

    The installed ``claude_agent_sdk`` package's bundled binary (``_bundled/claude``, in the
    SDK's wheels), else ``claude`` on ``PATH``. Raises ``FileNotFoundError`` naming both when
    neither exists. The package is located, not imported.
    """
    exe = _exe("claude")
    looked = []
    spec = importlib.util.find_spec("claude_agent_sdk")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = os.path.join(location, "_bundled", exe)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
        looked.append(candidate)
    if not locations:
        looked.append(f"the claude_agent_sdk package's _bundled/{exe} (claude_agent_sdk is not installed for {sys.executable})")
    found = shutil.which(exe)
    if found:
        return found
    looked.append(f"{exe} on PATH ({os.environ.get('PATH', '')})")
    raise FileNotFoundError(
        "cannot find the claude the Agent SDK would run: looked for "
        + "; ".join(looked)
        + ". Install claude-agent-sdk from its wheel (it bundles claude), put claude on PATH, "
        "or pass claude= to sdk_options()"
    )


def plugin_path() -> str:
    """The directory of the Claude Code plugin this package carries (subagent continue-once).

    For ``ClaudeAgentOptions(plugins=[{"type": "local", "path": plugin_path()}])`` (what
    :func:`sdk_options` adds by default) or ``claude --plugin-dir``. Its hooks run
    ``$AGENT_WATCHDOG_BIN hook`` (else ``agent-watchdog`` on ``PATH``).
    """
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugin")
    manifest = os.path.join(path, ".claude-plugin", "plugin.json")
    if not os.path.isfile(manifest):
        raise FileNotFoundError(
            f"this installation of agent-sdk-watchdog carries no plugin (no {manifest}): "
            "build the wheel with scripts/build-packages"
        )
    return path


def _get(message: Any, key: str) -> Any:
    if isinstance(message, dict):
        return message.get(key)
    return getattr(message, key, None)


def watchdog_kill(message: Any) -> Optional[WatchdogKill]:
    """The watchdog's kill, if ``message`` is the final ``result`` ``claude-watchdog`` wrote.

    Takes the SDK's ``ResultMessage`` or a plain dict (a stream-json line). Returns
    ``WatchdogKill(kind, reason)`` for our result (``subtype == "error_during_execution"``,
    ``is_error``, ``terminal_reason == "watchdog_<kind>"``), and ``None`` for any other message,
    a result of Claude Code's own, or anything malformed. Never raises.
    """
    if isinstance(message, dict) and message.get("type", "result") != "result":
        return None
    reason = _get(message, "terminal_reason")
    text = _get(message, "result")
    if (
        _get(message, "subtype") != "error_during_execution"
        or _get(message, "is_error") is not True
        or not isinstance(reason, str)
        or not reason.startswith("watchdog_")
        or len(reason) == len("watchdog_")
        or not isinstance(text, str)
    ):
        return None
    return WatchdogKill(kind=reason[len("watchdog_") :], reason=text)


def _duration(key: str, value: Duration, allow_zero: bool = False) -> str:
    if isinstance(value, bool):
        raise TypeError(f"{key}: expected a duration, got a bool")
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        if not value.strip():
            raise ValueError(f"{key}: empty duration")
        return value.strip()
    else:
        raise TypeError(f"{key}: expected a duration, got {type(value).__name__}")
    if not (seconds > 0 or (allow_zero and seconds == 0)) or seconds == float("inf"):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{key}: expected a duration {bound}, got {value!r}")
    return repr(seconds)


def _number(key: str, value: Union[int, float]) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{key}: expected a number, got {type(value).__name__}")
    return repr(float(value))


def watchdog_env(
    *,
    idle: Optional[Duration] = None,
    no_progress: Optional[Duration] = None,
    startup: Optional[Duration] = None,
    linger: Optional[Duration] = None,
    ceiling: Optional[Duration] = None,
    grace: Optional[Duration] = None,
    extend_factor: Optional[float] = None,
    high_utilization: Optional[float] = None,
    warn_at: Optional[float] = None,
    write_tools: Optional[Iterable[str]] = None,
    record: Optional[Union[str, os.PathLike]] = None,
    summary: Optional[Union[str, os.PathLike]] = None,
    claude: Optional[Union[str, os.PathLike]] = None,
    ledger: Optional[str] = None,
) -> Dict[str, str]:
    """The ``AGENT_WATCHDOG_*`` variables for the given policy; unset values are left out.

    Durations are checked for type here; their ranges are checked by ``claude-watchdog``,
    which refuses a bad value with exit code 2 and a message naming the variable. ``record``
    and ``summary`` name a capture and a summary file; ``claude`` the real ``claude``;
    ``ledger`` the shared ledger (``redis://…``, ``postgres://…``) the subagent plugin's hook
    keeps its markers in (docs/fleets.md).
    """
    env: Dict[str, str] = {}
    for key, dur in (
        ("idle", idle),
        ("no_progress", no_progress),
        ("startup", startup),
        ("linger", linger),
        ("ceiling", ceiling),
    ):
        if dur is not None:
            env[f"AGENT_WATCHDOG_{key.upper()}"] = _duration(key, dur)
    if grace is not None:
        # 0 is a valid grace (SIGKILL right after SIGTERM).
        env["AGENT_WATCHDOG_GRACE"] = _duration("grace", grace, allow_zero=True)
    for key, num in (
        ("extend_factor", extend_factor),
        ("high_utilization", high_utilization),
        ("warn_at", warn_at),
    ):
        if num is not None:
            env[f"AGENT_WATCHDOG_{key.upper()}"] = _number(key, num)
    if write_tools is not None:
        if isinstance(write_tools, str):
            raise TypeError("write_tools: expected a list of tool names, got a str")
        tools = [str(t) for t in write_tools]
        if any("," in t or not t.strip() for t in tools):
            raise ValueError(f"write_tools: tool names must be non-empty and without commas: {tools!r}")
        env["AGENT_WATCHDOG_WRITE_TOOLS"] = ",".join(tools)
    for var, path in (("RECORD", record), ("SUMMARY", summary), ("CLAUDE", claude), ("LEDGER", ledger)):
        if path is not None:
            env[f"AGENT_WATCHDOG_{var}"] = os.fspath(path)
    return env


def sdk_options(
    *,
    env: Optional[Dict[str, str]] = None,
    idle: Optional[Duration] = None,
    no_progress: Optional[Duration] = None,
    startup: Optional[Duration] = None,
    linger: Optional[Duration] = None,
    ceiling: Optional[Duration] = None,
    grace: Optional[Duration] = None,
    extend_factor: Optional[float] = None,
    high_utilization: Optional[float] = None,
    warn_at: Optional[float] = None,
    write_tools: Optional[Iterable[str]] = None,
    record: Optional[Union[str, os.PathLike]] = None,
    summary: Optional[Union[str, os.PathLike]] = None,
    claude: Optional[Union[str, os.PathLike]] = None,
    ledger: Optional[str] = None,
    plugin: bool = True,
    plugins: Optional[Iterable[SdkPlugin]] = None,
) -> SdkOptions:
    """``cli_path``, ``env`` and ``plugins`` for ``ClaudeAgentOptions``:
    ``ClaudeAgentOptions(**sdk_options(...))``.

    ``env`` (optional) is your own extra environment for the session; the policy variables are
    added over it. See :func:`watchdog_env` for the policy arguments. The real ``claude`` is
    ``claude=``, else an ``AGENT_WATCHDOG_CLAUDE`` in ``env`` or the environment, else
    :func:`sdk_claude` (the SDK's bundled binary, then ``PATH``), passed as
    ``AGENT_WATCHDOG_CLAUDE``. ``plugins`` is yours (``plugins=``) plus this package's plugin
    (:func:`plugin_path`, with ``AGENT_WATCHDOG_BIN`` set to this package's ``agent-watchdog``
    for its hooks) unless ``plugin=False``.
    """
    if not isinstance(plugin, bool):
        raise TypeError(f"plugin: expected a bool, got {type(plugin).__name__}")
    merged = dict(env or {})
    merged.update(
        watchdog_env(
            idle=idle,
            no_progress=no_progress,
            startup=startup,
            linger=linger,
            ceiling=ceiling,
            grace=grace,
            extend_factor=extend_factor,
            high_utilization=high_utilization,
            warn_at=warn_at,
            write_tools=write_tools,
            record=record,
            summary=summary,
            claude=claude,
            ledger=ledger,
        )
    )
    if "AGENT_WATCHDOG_CLAUDE" not in merged and not os.environ.get("AGENT_WATCHDOG_CLAUDE"):
        merged["AGENT_WATCHDOG_CLAUDE"] = sdk_claude()
    if plugins is not None and isinstance(plugins, (str, dict)):
        raise TypeError("plugins: expected a list of {'type': 'local', 'path': ...}")
    all_plugins: List[SdkPlugin] = list(plugins or [])
    if plugin:
        all_plugins.append({"type": "local", "path": plugin_path()})
        merged.setdefault("AGENT_WATCHDOG_BIN", cli_path("agent-watchdog"))
    return {"cli_path": cli_path(), "env": merged, "plugins": all_plugins}

# --- In-process API (the Rust core as a Python extension): see agent_sdk_watchdog.inprocess.
# Kept as one separate block; the helpers above do not depend on it. Loaded on first use
# (PEP 562), so that `import agent_sdk_watchdog` and the helpers never need the extension.
_LAZY = {
    **dict.fromkeys(
        (
            "RATE_LIMIT_DEFAULTS",
            "SHADOWED_CATEGORY",
            "WARNING_FILTER_DEFAULTS",
            "WATCHDOG_DEFAULTS",
            "Kill",
            "RateLimitMonitor",
            "Watchdog",
            "WatchdogHandle",
            "WatchdogKilled",
            "create_rate_limit_monitor",
            "create_watchdog",
            "format_rate_limit_reading",
            "install_sdk_warning_filter",
            "make_watchdog_hook",
            "rate_limit_reset_iso",
        ),
        ".inprocess",
    ),
    **dict.fromkeys(("LatenessHistogram", "Metrics", "MetricsServer", "serve_metrics"), ".metrics"),
}

if TYPE_CHECKING:
    from .inprocess import (  # noqa: F401
        RATE_LIMIT_DEFAULTS,
        SHADOWED_CATEGORY,
        WARNING_FILTER_DEFAULTS,
        WATCHDOG_DEFAULTS,
        Kill,
        RateLimitMonitor,
        Watchdog,
        WatchdogHandle,
        WatchdogKilled,
        create_rate_limit_monitor,
        create_watchdog,
        format_rate_limit_reading,
        install_sdk_warning_filter,
        make_watchdog_hook,
        rate_limit_reset_iso,
    )
    from .metrics import LatenessHistogram, Metrics, MetricsServer, serve_metrics  # noqa: F401


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        loaded = importlib.import_module(module, __name__)
    except ImportError as e:
        import platform

        raise ImportError(
            f"agent_sdk_watchdog.{name} needs the in-process extension agent_sdk_watchdog._native, "
            f"which did not load here ({sys.platform} {platform.machine()}, "
            f"Python {platform.python_version()}): {e}"
        ) from e
    value = getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ += list(_LAZY)
# --- end of the in-process API block

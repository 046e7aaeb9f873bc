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

The policy's rules (each option's variable and range) and the result's reader are the Rust
core's, through the extension ``agent_sdk_watchdog._native`` (loaded on the first call).
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
    built_here = (sys.platform.startswith("linux") and machine in ("x86_64", "amd64", "aarch64", "arm64")) or (
        sys.platform == "win32" and machine in ("x86_64", "amd64")
    )
    why = (
        ""
        if built_here
        else f"; agent-sdk-watchdog's binaries are built for {BINARY_PLATFORMS} only, not {sys.platform} {machine}"
    )
    return (
        f"{exe} is not installed here (looked in {', '.join(dirs)} and on PATH){why}: "
        "the in-process API (create_watchdog, create_rate_limit_monitor) works without it"
    )


BINARY_PLATFORMS = "Linux x86-64 and arm64 (glibc or musl) and Windows x86-64"
"""Where the wheel carries ``agent-watchdog`` and ``claude-watchdog`` (``.exe`` on Windows);
elsewhere (macOS, Windows on arm64) it carries the in-process API only."""


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


def watchdog_kill(message: Any) -> Optional[WatchdogKill]:
    """The watchdog's kill, if ``message`` is the final ``result`` ``claude-watchdog`` wrote.

    Takes the SDK's ``ResultMessage`` or a plain dict (a stream-json line). Returns
    ``WatchdogKill(kind, reason)`` for our result (``subtype == "error_during_execution"``,
    ``is_error``, ``terminal_reason == "watchdog_<kind>"``), and ``None`` for any other message,
    a result of Claude Code's own, or anything malformed. Never raises. (The reader is the
    core's, the one the drop-in's writer is checked against.)
    """
    from . import _native

    try:
        found = _native.watchdog_kill(message)
    except Exception:  # noqa: BLE001 - never raises, whatever the object
        return None
    return None if found is None else WatchdogKill(*found)


def watchdog_env(**policy: Any) -> Dict[str, str]:
    """The ``AGENT_WATCHDOG_*`` variables for the given policy; ``None`` values are left out.

    Every option the drop-in or the plugin's hook reads is a keyword (``idle``,
    ``no_progress``, ``startup``, ``linger``, ``ceiling``, ``grace``, ``extend_factor``,
    ``high_utilization``, ``warn_at``, ``write_tools``, ``busy_cap``, ``max_backoff``,
    ``output_blocked``, ``max_rss``, ``record``, ``summary``, ``claude``, ``ledger``, …; the
    table of docs/cli.md). A duration is ``"90s"``, ``"10m"``, a number of seconds or a
    ``timedelta``; ``write_tools`` a list of names; ``record``, ``summary`` and ``claude`` paths;
    ``ledger`` the shared ledger (``redis://…``, ``postgres://…``, docs/fleets.md). Each value is
    checked by its option's rule (the one the drop-in reads it by): ``TypeError`` for an
    unknown field or a value of the wrong type, ``ValueError`` for one out of its range.
    """
    from . import _native

    return dict(_native.watchdog_env(policy))


def sdk_options(
    *,
    env: Optional[Dict[str, str]] = None,
    plugin: bool = True,
    plugins: Optional[Iterable[SdkPlugin]] = None,
    **policy: Any,
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
    merged.update(watchdog_env(**policy))
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
# Kept as one separate block. Loaded on first use (PEP 562), so that `import agent_sdk_watchdog`
# never needs the extension.
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

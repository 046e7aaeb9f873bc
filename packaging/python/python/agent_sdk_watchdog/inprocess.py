"""The watchdog in-process, for Python Agent SDK hosts, on the Rust core.

Three lines around your loop::

    from agent_sdk_watchdog import create_watchdog, WatchdogKilled

    watchdog = create_watchdog(idle="5m", no_progress="20m")   # one per process
    with watchdog.register(hard_ceiling="1h") as handle:
        options = ClaudeAgentOptions(hooks=handle.hooks(), can_use_tool=..., ...)
        async for message in handle.guard(query(prompt=..., options=options)):
            ...                     # WatchdogKilled ends the loop on a kill

Every deadline is the core's exact next deadline (one timer thread per watchdog, sleeping
until it; no tick). ``guard()`` feeds each message to the handle; a kill cancels the SDK's
pending ``__anext__`` at once (its CLI is sent SIGTERM and the SDK's own close reaps it) and
raises :class:`WatchdogKilled`, under asyncio and trio alike (through anyio, as the SDK).

The library prints nothing: callbacks (``on_kill``, ``on_extend``, ``on_stalling``) get what
happened and an error they raise goes to ``on_error`` (dropped by default).
"""

from __future__ import annotations

import math
import threading
import time
from types import MappingProxyType
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

from . import _native
from ._durations import Seconds, _number, _seconds
from ._handle import Kill, WatchdogHandle, WatchdogKilled, _kill, make_watchdog_hook
from ._rate_limits import (
    RATE_LIMIT_DEFAULTS,
    RateLimitMonitor,
    create_rate_limit_monitor,
    format_rate_limit_reading,
    rate_limit_reset_iso,
)
from ._sdk_warnings import (  # noqa: F401 - suppressed_warnings: re-exported
    SHADOWED_CATEGORY,
    WARNING_FILTER_DEFAULTS,
    install_sdk_warning_filter,
    suppressed_warnings,
)
from .metrics import Metrics, _metrics

__all__ = [
    "WATCHDOG_DEFAULTS",
    "RATE_LIMIT_DEFAULTS",
    "WARNING_FILTER_DEFAULTS",
    "SHADOWED_CATEGORY",
    "Kill",
    "WatchdogKilled",
    "Watchdog",
    "WatchdogHandle",
    "RateLimitMonitor",
    "create_watchdog",
    "make_watchdog_hook",
    "create_rate_limit_monitor",
    "format_rate_limit_reading",
    "rate_limit_reset_iso",
    "install_sdk_warning_filter",
]

WATCHDOG_DEFAULTS: Mapping[str, Any] = MappingProxyType(dict(_native.watchdog_defaults()))
"""The core's defaults (durations in seconds): idle 600, no_progress 1800, startup 180,
linger 660, ceiling None, extend_factor 2, high_utilization 0.9, warn_at 0.8, write_tools."""


_EVENTS = 1
_REARM = 2


class Watchdog:
    """Supervises any number of queries on one exact timer. Made by :func:`create_watchdog`."""

    def __init__(
        self,
        core: Any,
        clock: Callable[[], float],
        timer: bool,
        get_utilization: Optional[Callable[[float], Optional[float]]],
        on_error: Optional[Callable[[BaseException], None]],
    ) -> None:
        self._core = core
        self._clock = clock
        self._timer = timer
        self._get_utilization = get_utilization
        self._on_error = on_error
        self._handles: Dict[int, WatchdogHandle] = {}
        self._cond = threading.Condition(threading.Lock())
        self._thread: Optional[threading.Thread] = None
        self._closed = False
        self._sinks: List[List[Kill]] = []
        self._generation = 0
        self.config: Mapping[str, Any] = MappingProxyType(dict(core.config()))

    # -- registration
    def register(
        self,
        *,
        hard_ceiling: Optional[Seconds] = None,
        on_kill: Optional[Callable[[Kill], None]] = None,
        on_extend: Optional[Callable[[str, Optional[float]], None]] = None,
        on_stalling: Optional[Callable[[str, float], None]] = None,
        now: Optional[float] = None,
    ) -> "WatchdogHandle":
        """Start supervising one query; returns its handle (also a context manager that
        unregisters on exit). ``hard_ceiling`` overrides the watchdog's ``ceiling``."""
        ceiling = None if hard_ceiling is None else _seconds("hard_ceiling", hard_ceiling)
        t = self._clock() if now is None else now
        sid, flags = self._core.register(t, ceiling)
        h = WatchdogHandle(self, sid, on_kill, on_extend, on_stalling, ceiling)
        self._handles[sid] = h
        if self._timer:
            with self._cond:
                if self._thread is None:
                    self._closed = False
                    self._generation += 1
                    self._thread = threading.Thread(
                        target=self._run,
                        args=(self._generation,),
                        name="agent-sdk-watchdog timer",
                        daemon=True,
                    )
                    self._thread.start()
        self._after(flags)
        return h

    def tick(self, now: Optional[float] = None) -> List[Kill]:
        """Process everything due at ``now`` (virtual time: a watchdog made with ``now=``
        has no timer thread; call this); returns the kills this call made."""
        t = self._clock() if now is None else now
        sink: List[Kill] = []
        self._sinks.append(sink)
        try:
            self._utilization(t)
            self._dispatch(self._core.handle_timeout(t))
        finally:
            self._sinks.remove(sink)
        return sink

    def poll_timeout(self) -> Optional[float]:
        """The next deadline of any query, on the watchdog's clock, or None."""
        return self._core.poll_timeout()

    def close(self) -> None:
        """Stop the timer and forget every query (their ``kill`` stays as it was)."""
        with self._cond:
            self._closed = True
            self._thread = None  # a later register() starts a new one
            self._core.clear()
            self._handles.clear()
            self._cond.notify_all()

    def metrics(self) -> Metrics:
        """What this watchdog counted since it was made (kills, ends, warnings, extensions,
        kill lateness; totals, never per query) and its gauges now: a cheap snapshot."""
        return _metrics(self._core.metrics_json())

    def render_prometheus(self) -> str:
        """The same in the Prometheus text exposition format 0.0.4 (what a scrape of
        :func:`serve_metrics`'s ``/metrics`` answers): the series of the Rust watchdog's
        endpoint, no per-query label."""
        return self._core.render_prometheus()

    def line_counts(self) -> Dict[str, int]:
        """Messages observed per kind (all queries), by the core's kind names."""
        return dict(self._core.line_counts())

    def __len__(self) -> int:
        return len(self._core)

    # -- internals
    def _utilization(self, t: float) -> None:
        if self._get_utilization is None:
            return
        try:
            u = self._get_utilization(t)
        except BaseException as e:  # noqa: BLE001 - routed to on_error
            self._error(e)
            u = None
        # Applied at the last instant the core saw, before what is due at `t` runs: the
        # reading holds up to `t` (a wake-up at a kill's deadline sees it in time).
        self._after(self._core.set_utilization(None if u is None else float(u), -math.inf))

    def _error(self, e: BaseException) -> None:
        if self._on_error is not None:
            try:
                self._on_error(e)
            except BaseException:  # noqa: BLE001 - a throwing on_error is dropped
                pass

    def _after(self, flags: int) -> None:
        if flags & _EVENTS:
            self._dispatch(0)
        if flags & _REARM and self._timer:
            with self._cond:
                self._cond.notify()

    def _dispatch(self, flags: int) -> List[Kill]:
        kills: List[Kill] = []
        for name, sid, data in self._core.events():
            h = self._handles.get(sid)
            if h is None:
                continue
            if name == "killed":
                k = _kill(data)
                h._kill = k
                kills.append(k)
                for sink in self._sinks:
                    sink.append(k)
                h._killed(k)
            elif name == "extended" and not h._extend_noted:
                h._extend_noted = True
                if h._on_extend is not None:
                    u = self._core_utilization()
                    h._call(h._on_extend, data, u)
            elif name == "stalling" and h._on_stalling is not None:
                h._call(h._on_stalling, data[0], data[1])
        if flags & _REARM and self._timer:
            with self._cond:
                self._cond.notify()
        return kills

    def _core_utilization(self) -> Optional[float]:
        if self._get_utilization is None:
            return None
        try:
            return self._get_utilization(self._clock())
        except BaseException:  # noqa: BLE001
            return None

    def _run(self, generation: int) -> None:
        """The timer thread: sleeps until the core's next deadline, exactly. It ends when the
        watchdog is closed (a thread of an earlier opening never outlives its close)."""
        cond = self._cond
        while True:
            with cond:
                while True:
                    if self._closed or generation != self._generation:
                        return
                    if len(self._core) == 0:
                        # Nothing to supervise: the thread ends (and does not keep this
                        # watchdog alive); the next register() starts one.
                        self._thread = None
                        return
                    due = self._core.poll_timeout()
                    now = self._clock()
                    if due is not None and due <= now:
                        break
                    self._core.set_armed(due)
                    cond.wait(None if due is None else due - now)
                self._core.set_armed(None)
            try:
                self.tick(now)
            except BaseException as e:  # noqa: BLE001 - the timer never dies
                self._error(e)


def create_watchdog(
    *,
    idle: Optional[Seconds] = None,
    no_progress: Optional[Seconds] = None,
    startup: Optional[Seconds] = None,
    linger: Optional[Seconds] = None,
    ceiling: Optional[Seconds] = None,
    extend_factor: Optional[float] = None,
    high_utilization: Optional[float] = None,
    warn_at: Optional[float] = None,
    write_tools: Optional[Iterable[str]] = None,
    get_utilization: Optional[Callable[[float], Optional[float]]] = None,
    now: Optional[Callable[[], float]] = None,
    on_error: Optional[Callable[[BaseException], None]] = None,
) -> Watchdog:
    """A watchdog for any number of queries (the options and rules are the core's; an
    option left ``None`` keeps its default, :data:`WATCHDOG_DEFAULTS`). A bad value raises
    ``ValueError`` naming the option, the range and the value.

    ``now``: a clock (seconds). Given one, the watchdog runs no timer: call
    :meth:`Watchdog.tick` (virtual time). Default ``time.monotonic`` with a timer thread
    that sleeps until the core's next deadline and never keeps the process alive.
    ``get_utilization(now)``: the rate-limit utilization (0-1) or None, read at each timer
    wake-up, e.g. ``lambda now: monitor.utilization()``.
    """
    d = WATCHDOG_DEFAULTS

    def dur(option: str, value: Any) -> float:
        return d[option] if value is None else _seconds(option, value)

    def num(option: str, value: Any) -> float:
        return d[option] if value is None else _number(option, value)

    if isinstance(write_tools, str):
        raise TypeError("write_tools: expected a list of tool names, got a str")
    clock = now if now is not None else time.monotonic
    core = _native.Core(
        epoch=clock(),
        idle=dur("idle", idle),
        no_progress=dur("no_progress", no_progress),
        startup=dur("startup", startup),
        linger=dur("linger", linger),
        ceiling=None if ceiling is None else _seconds("ceiling", ceiling),
        extend_factor=num("extend_factor", extend_factor),
        high_utilization=num("high_utilization", high_utilization),
        warn_at=num("warn_at", warn_at),
        write_tools=list(d["write_tools"] if write_tools is None else write_tools),
    )
    return Watchdog(core, clock, now is None, get_utilization, on_error)

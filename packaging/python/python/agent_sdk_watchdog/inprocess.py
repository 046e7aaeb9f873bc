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

import datetime
import math
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from types import MappingProxyType
from typing import (
    Any,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
)

from . import _native
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

T = TypeVar("T")
Seconds = Union[str, int, float, datetime.timedelta]
"""A duration: ``"90s"``, ``"10m"``, ``"1h30m"``, a number of seconds, or a ``timedelta``."""

WATCHDOG_DEFAULTS: Mapping[str, Any] = MappingProxyType(dict(_native.watchdog_defaults()))
"""The core's defaults (durations in seconds): idle 600, no_progress 1800, startup 180,
linger 660, ceiling None, extend_factor 2, high_utilization 0.9, warn_at 0.8, write_tools."""

RATE_LIMIT_DEFAULTS: Mapping[str, Any] = MappingProxyType(dict(_native.rate_limit_defaults()))
"""warn_at 0.85, fallback_window ``"five_hour"``."""

SHADOWED_CATEGORY = "claude_agent_sdk.types.CanUseToolShadowedWarning"
"""The SDK's warning for ``can_use_tool`` beside bare MCP tool names in ``allowed_tools``."""

WARNING_FILTER_DEFAULTS: Mapping[str, Any] = MappingProxyType({"categories": (SHADOWED_CATEGORY,)})


def _seconds(option: str, value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(f"{option}: expected a duration, got a bool")
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return _native.parse_duration_seconds(option, value)
    raise TypeError(f"{option}: expected a duration, got {type(value).__name__}")


def _number(option: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{option}: expected a number, got {type(value).__name__}")
    return float(value)


@dataclass(frozen=True)
class Kill:
    """Why and when a query was killed (times in seconds)."""

    kind: str
    """``idle``, ``no_progress``, ``ceiling``, ``startup`` or ``linger``."""
    reason: str
    at: float
    """The deadline, on the watchdog's clock (the kill is dated exactly there)."""
    elapsed: float
    since_progress: float
    since_tool: float


def _kill(t: Tuple[str, str, float, float, float, float]) -> Kill:
    return Kill(*t)


class WatchdogKilled(Exception):
    """The watchdog killed the query: ``guard()`` ends the loop with this."""

    def __init__(self, kill: Kill) -> None:
        super().__init__(f"agent-sdk-watchdog killed the query ({kill.kind}): {kill.reason}")
        self.kill = kill
        self.kind = kill.kind
        self.reason = kill.reason


def _loop_caller() -> Optional[Callable[[Callable[[], None]], None]]:
    """A thread-safe "run this in the current event loop" for asyncio or trio, if inside one."""
    try:
        import sniffio

        lib = sniffio.current_async_library()
    except Exception:
        return None
    if lib == "asyncio":
        import asyncio

        loop = asyncio.get_running_loop()
        return lambda f: loop.call_soon_threadsafe(f)
    if lib == "trio":
        import trio

        token = trio.lowlevel.current_trio_token()
        return lambda f: token.run_sync_soon(f)
    return None


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


class WatchdogHandle:
    """One supervised query. Feed it from that query only."""

    def __init__(
        self,
        watchdog: Watchdog,
        sid: int,
        on_kill: Optional[Callable[[Kill], None]],
        on_extend: Optional[Callable[[str, Optional[float]], None]],
        on_stalling: Optional[Callable[[str, float], None]],
        ceiling: Optional[float],
    ) -> None:
        self._w = watchdog
        self._core = watchdog._core
        self._sid = sid
        self._on_kill = on_kill
        self._on_extend = on_extend
        self._on_stalling = on_stalling
        self._ceiling = ceiling
        self._kill: Optional[Kill] = None
        self._extend_noted = False
        self._live = True
        self._cancel: Optional[Callable[[], None]] = None
        self._call_soon = _loop_caller()
        self._loop_thread = threading.get_ident()
        # The hot path: the core's own method, and the clock only when it is not the real one
        # (the core reads the monotonic clock itself, without a call back into Python).
        self._observe = watchdog._core.observe
        self._virtual = None if watchdog._timer else watchdog._clock

    # -- feeding
    def observe(self, message: Any, now: Optional[float] = None) -> None:
        """Feed one message ``query()`` yielded, as it is (any SDK message object; a raw
        stream-json ``dict``, ``bytes`` or ``str`` line works too)."""
        if now is None and self._virtual is not None:
            now = self._virtual()
        f = self._observe(self._sid, message, now)
        if f:
            self._w._after(f)

    def activity(self, tool_name: Optional[str] = None, now: Optional[float] = None) -> None:
        """A tool boundary: progress; a write tool's name ends the pre-write extension."""
        self._w._after(self._core.activity(self._sid, tool_name, self._now(now)))

    def stream(self, now: Optional[float] = None) -> None:
        """A stream frame: progress."""
        self._w._after(self._core.stream(self._sid, self._now(now)))

    def heartbeat(self, now: Optional[float] = None) -> None:
        """A sign of life that is not progress (a settled query stays settled)."""
        self._w._after(self._core.heartbeat(self._sid, self._now(now)))

    def settle(self, now: Optional[float] = None) -> None:
        """Settled, as by a result: only the linger and the ceiling apply until new work."""
        self._w._after(self._core.settle(self._sid, self._now(now)))

    def tool_start(self, tool_use_id: str, now: Optional[float] = None) -> None:
        """A tool began (``PreToolUse``): until it ends, the idle rule is held off (the CLI's
        heartbeats, which a Python host never sees, would have kept it alive); the
        no-progress cap and the ceiling keep running."""
        self._w._after(self._core.tool_start(self._sid, tool_use_id, self._now(now)))

    def tool_end(
        self, tool_use_id: str, tool_name: Optional[str] = None, now: Optional[float] = None
    ) -> None:
        """A tool ended (``PostToolUse`` with its name; ``PostToolUseFailure`` without)."""
        self._w._after(self._core.tool_end(self._sid, tool_use_id, tool_name, self._now(now)))

    def _now(self, now: Optional[float]) -> float:
        return self._w._clock() if now is None else now

    # -- state
    @property
    def kill(self) -> Optional[Kill]:
        """The kill, or None; readable after :meth:`unregister`."""
        return self._kill

    def end(self, now: Optional[float] = None) -> Optional[str]:
        """The query ended (its stream is over, or it was killed): returns its outcome,
        ``success``, ``error_result``, ``killed``, ``no_result`` or ``incomplete``, and counts
        it in :meth:`Watchdog.metrics` once (a later call returns the same and counts nothing).
        ``guard()`` calls it when its loop ends; a query unregistered without ending is not
        counted. None once unregistered."""
        if not self._live:
            return None
        outcome, flags = self._core.end(self._sid, self._now(now))
        self._w._after(flags)
        return outcome

    def unregister(self) -> None:
        """Stop supervising (idempotent)."""
        if self._live:
            self._live = False
            self._w._handles.pop(self._sid, None)
            self._core.unregister(self._sid)
            if self._w._timer and len(self._core) == 0:
                with self._w._cond:
                    self._w._cond.notify()

    def __enter__(self) -> "WatchdogHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unregister()

    # -- kills
    def _call(self, f: Callable[..., Any], *args: Any) -> None:
        try:
            f(*args)
        except BaseException as e:  # noqa: BLE001 - routed to on_error
            self._w._error(e)

    def _killed(self, kill: Kill) -> None:
        def deliver() -> None:
            if self._on_kill is not None:
                self._call(self._on_kill, kill)
            cancel = self._cancel
            if cancel is not None:
                cancel()

        if self._call_soon is not None and threading.get_ident() != self._loop_thread:
            try:
                self._call_soon(deliver)
                return
            except RuntimeError:  # the loop is closed
                pass
        deliver()

    # -- the SDK's wiring
    def hooks(self) -> Dict[str, List[Any]]:
        """``ClaudeAgentOptions(hooks=...)`` entries that feed this handle (merge them with
        your own lists): ``PreToolUse``, ``PostToolUse``, ``PostToolUseFailure``."""
        from claude_agent_sdk import HookMatcher

        hook = make_watchdog_hook(self)
        return {
            event: [HookMatcher(matcher=None, hooks=[hook])]
            for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure")
        }

    def can_use_tool(self, callback: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        """Wrap a ``can_use_tool`` callback: while it runs (a person deciding), the idle and
        no-progress clocks stand still, as for a permission prompt; the ceiling runs."""

        async def wrapped(*args: Any, **kwargs: Any) -> T:
            rid, f = self._core.permission_begin(self._sid, self._w._clock())
            self._w._after(f)
            try:
                return await callback(*args, **kwargs)
            finally:
                self._w._after(self._core.permission_end(self._sid, rid, self._w._clock()))

        return wrapped

    def sdk_options(self, **policy: Any) -> Dict[str, Any]:
        """``cli_path`` and ``env`` for ``ClaudeAgentOptions`` that also run the session under
        ``claude-watchdog`` (the drop-in: it sees every line and stops the whole process tree),
        with this watchdog's policy and this handle's ceiling unless ``policy`` says otherwise
        (the arguments of :func:`agent_sdk_watchdog.sdk_options`)."""
        from . import sdk_options

        c = self._w.config
        defaults: Dict[str, Any] = {
            "idle": c["idle"],
            "no_progress": c["no_progress"],
            "startup": c["startup"],
            "linger": c["linger"],
            "extend_factor": c["extend_factor"],
            "high_utilization": c["high_utilization"],
            "warn_at": c["warn_at"],
            "write_tools": list(c["write_tools"]),
        }
        ceiling = self._ceiling if self._ceiling is not None else c["ceiling"]
        if ceiling is not None:
            defaults["ceiling"] = ceiling
        defaults.update(policy)
        return dict(sdk_options(**defaults))

    def guard(self, messages: AsyncIterable[T]) -> AsyncIterator[T]:
        """Iterate ``messages`` (what ``query()`` returns), feeding each to this handle; a kill
        ends the iteration with :class:`WatchdogKilled` the moment it lands, even if the SDK
        never yields again, and closes the SDK's generator (its CLI is stopped). The end of
        the iteration (the stream's, or the kill's) ends the query (:meth:`end`)."""
        return _Guard(self, messages)


def _sdk_children() -> Optional[set]:
    """The SDK's set of live CLI processes, if the SDK is loaded (never imports it: a guard
    around another source costs nothing)."""
    mod = sys.modules.get("claude_agent_sdk._internal.transport.subprocess_cli")
    children = getattr(mod, "_ACTIVE_CHILDREN", None)
    return children if isinstance(children, set) else None


class _Guard(AsyncIterator[T]):
    def __init__(self, handle: WatchdogHandle, source: AsyncIterable[T]) -> None:
        self._h = handle
        self._it = source.__aiter__()
        self._done = False
        self._process: Any = None
        self._known: Optional[set] = None

    def __aiter__(self) -> "_Guard[T]":
        return self

    async def _close(self) -> None:
        self._done = True
        aclose = getattr(self._it, "aclose", None)
        if aclose is not None:
            import anyio

            with anyio.CancelScope(shield=True):
                try:
                    await aclose()
                except BaseException:  # noqa: BLE001 - the kill is what the caller hears
                    pass

    def _stop_cli(self) -> None:
        p = self._process
        if p is not None and getattr(p, "returncode", 0) is None:
            try:
                p.terminate()
            except Exception:
                pass

    async def __anext__(self) -> T:
        import anyio

        h = self._h
        if self._done:
            raise StopAsyncIteration
        if h._kill is not None:
            await self._close()
            h.end()
            raise WatchdogKilled(h._kill)
        if h._call_soon is None:
            h._call_soon = _loop_caller()
            h._loop_thread = threading.get_ident()
        children = _sdk_children() if self._process is None else None
        if children is not None and self._known is None:
            self._known = set(children)
        scope = anyio.CancelScope()

        def cancel() -> None:
            self._stop_cli()
            scope.cancel()

        h._cancel = cancel
        try:
            with scope:
                message = await self._it.__anext__()
        except StopAsyncIteration:
            self._done = True
            h.end()
            raise
        finally:
            h._cancel = None
        if children is not None and self._known is not None and self._process is None:
            new = [p for p in children if p not in self._known]
            if len(new) == 1:
                self._process = new[0]
        if scope.cancelled_caught or (scope.cancel_called and h._kill is not None):
            await self._close()
            h.end()
            raise WatchdogKilled(h._kill) from None  # type: ignore[arg-type]
        h.observe(message)
        if h._kill is not None:
            self._stop_cli()
            await self._close()
            h.end()
            raise WatchdogKilled(h._kill)
        return message

    async def aclose(self) -> None:
        await self._close()


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


def make_watchdog_hook(handle: WatchdogHandle) -> Callable[[Any, Optional[str], Any], Awaitable[Dict[str, Any]]]:
    """A hook callback for ``HookMatcher(hooks=[...])`` on ``PreToolUse``, ``PostToolUse`` and
    ``PostToolUseFailure``: a tool in flight is judged by the no-progress cap and the ceiling,
    not the idle rule. Only ``PostToolUse`` passes the tool name (a denied or failed write is
    not a write). Returns ``{}`` (no decision)."""

    async def hook(input_data: Any, tool_use_id: Optional[str], context: Any) -> Dict[str, Any]:
        try:
            event = input_data.get("hook_event_name")
            tid = tool_use_id or input_data.get("tool_use_id") or ""
            if event == "PreToolUse":
                handle.tool_start(tid)
            elif event == "PostToolUse":
                handle.tool_end(tid, input_data.get("tool_name"))
            elif event == "PostToolUseFailure":
                handle.tool_end(tid, None)
        except Exception as e:  # noqa: BLE001 - a hook never fails the tool
            handle._w._error(e)
        return {}

    return hook


class RateLimitMonitor:
    """Merges the ``rate_limit_event`` messages into one reading (the core's merge rules).
    Readings are dicts: ``status``, ``utilization``, ``resets_at`` (epoch seconds),
    ``rate_limit_type``, ``overage_status``, ``overage_disabled_reason``, …"""

    def __init__(self, native: Any, clock: Callable[[], float]) -> None:
        self._m = native
        self._clock = clock
        self.config: Mapping[str, Any] = MappingProxyType(dict(native.config()))

    def observe(self, message: Any, now: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """Fold a ``RateLimitEvent`` (any other message changes nothing); returns the merged
        reading the first time a window reaches ``warn_at``, else None."""
        return self._m.observe(message, self._clock() if now is None else now)

    def note(self, info: Mapping[str, Any], now: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """The same for a bare ``rate_limit_info`` dict (wire names)."""
        return self._m.note(info, self._clock() if now is None else now)

    def active(self, now: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """The reading, or None once its reset time has passed (use it for decisions)."""
        return self._m.active(self._clock() if now is None else now)

    def latest(self) -> Optional[Dict[str, Any]]:
        """The reading, stale or not (use it for display)."""
        return self._m.latest()

    def utilization(self, now: Optional[float] = None) -> Optional[float]:
        """The highest active window's utilization, or None (for ``get_utilization``)."""
        return self._m.utilization(self._clock() if now is None else now)

    def reset(self) -> None:
        """Forget the reading and arm the warning again."""
        self._m.reset()


def create_rate_limit_monitor(
    *,
    warn_at: Optional[float] = None,
    fallback_window: Optional[str] = None,
    now: Optional[Callable[[], float]] = None,
) -> RateLimitMonitor:
    """A rate-limit monitor. ``now``: a wall clock in epoch seconds (``time.time``)."""
    d = RATE_LIMIT_DEFAULTS
    native = _native.Monitor(
        warn_at=d["warn_at"] if warn_at is None else _number("warn_at", warn_at),
        fallback_window=d["fallback_window"] if fallback_window is None else str(fallback_window),
    )
    return RateLimitMonitor(native, now if now is not None else time.time)


def format_rate_limit_reading(reading: Mapping[str, Any]) -> str:
    """One line: ``allowed_warning at 99%, overage rejected (out_of_credits), resets at
    2030-03-17T18:46:40.000Z``."""
    return _native.format_rate_limit_reading(dict(reading))


def rate_limit_reset_iso(reading: Mapping[str, Any]) -> Optional[str]:
    """The reading's reset time as ISO-8601 UTC with milliseconds, or None."""
    return _native.rate_limit_reset_iso(dict(reading))


# -- the SDK warning filter

_FILTER_MARK = "_agent_sdk_watchdog_filter"


def _category_name(c: Union[str, Type[Warning]]) -> str:
    if isinstance(c, str):
        return c
    return f"{c.__module__}.{c.__qualname__}"


def install_sdk_warning_filter(
    *,
    categories: Optional[Sequence[Union[str, Type[Warning]]]] = None,
    on_first: Optional[Callable[[warnings.WarningMessage, str], None]] = None,
) -> bool:
    """Show each listed warning category once per process (default: the SDK's
    ``CanUseToolShadowedWarning``; a category is a class or its ``module.QualName``, and its
    subclasses count as it). The first of each is shown as Python shows warnings, or handed to
    ``on_first(message, category)`` instead; the rest are swallowed (counted by the core).
    Returns True when it installed the filter; a later call changes nothing and returns
    False."""
    if getattr(warnings, _FILTER_MARK, None) is not None:
        return False
    names = [_category_name(c) for c in (categories or WARNING_FILTER_DEFAULTS["categories"])]
    dedup = _native.WarningDedup(names)
    original = warnings.showwarning

    def listed(category: Type[Warning]) -> Optional[str]:
        for k in getattr(category, "__mro__", ()):
            name = f"{k.__module__}.{k.__qualname__}"
            if name in names:
                return name
        return None

    def showwarning(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        name = listed(category)
        if name is None:
            return original(message, category, filename, lineno, file, line)
        decision = dedup.check(name)
        if decision != "first":
            return None
        if on_first is not None:
            try:
                on_first(warnings.WarningMessage(message, category, filename, lineno, file, line), name)
            except Exception:  # noqa: BLE001 - a throwing on_first is dropped
                pass
            return None
        return original(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning
    # Every occurrence reaches the filter (Python's default would show each new text once).
    for c in categories or ():
        if not isinstance(c, str):
            warnings.filterwarnings("always", category=c)
    try:
        from claude_agent_sdk import CanUseToolShadowedWarning

        if _category_name(CanUseToolShadowedWarning) in names:
            warnings.filterwarnings("always", category=CanUseToolShadowedWarning)
    except Exception:
        pass
    setattr(warnings, _FILTER_MARK, dedup)
    return True


def suppressed_warnings(category: Union[str, Type[Warning]]) -> int:
    """How many warnings of ``category`` the filter swallowed after the first."""
    dedup = getattr(warnings, _FILTER_MARK, None)
    return 0 if dedup is None else dedup.suppressed(_category_name(category))

"""One supervised query: its handle (what feeds it, its kill), the SDK's wiring (hooks, the
permission wrapper, the drop-in's options) and ``guard()``, which ends the loop on a kill."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    List,
    Optional,
    Tuple,
    TypeVar,
)

if TYPE_CHECKING:
    from .inprocess import Watchdog

T = TypeVar("T")


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

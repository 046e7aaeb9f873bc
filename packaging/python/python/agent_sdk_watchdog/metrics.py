"""Fleet metrics of an in-process watchdog, and a ``/metrics`` endpoint for Prometheus.

``watchdog.metrics()`` is a snapshot (:class:`Metrics`) of what the watchdog counted since it
was made; ``watchdog.render_prometheus()`` is the same in the Prometheus text exposition format
0.0.4. Both come from the Rust side (``watchdog_host::metrics``), the counting and rendering
the Rust ``Watchdog`` uses, so the series are the same in every host::

    from agent_sdk_watchdog import create_watchdog, serve_metrics

    watchdog = create_watchdog()
    server = serve_metrics(watchdog, port=9464)   # GET http://127.0.0.1:9464/metrics
    ...
    server.close()

The endpoint is a daemon thread on a plain socket (stdlib only), not ``http.server`` and not
asyncio: the host may run asyncio, trio or no event loop at all (the watchdog's timer is a
thread too), and the core answers each request head (the runtime's endpoint gives the same
answers), with bounds ``http.server`` does not have: the whole head within ``timeout`` and
``max_head`` bytes, at most ``max_connections`` served at once. Nothing is printed.
"""

from __future__ import annotations

import json
import math
import selectors
import socket
import threading
import time
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, Optional, Tuple

from . import _native

if TYPE_CHECKING:
    from .inprocess import Watchdog

__all__ = ["LatenessHistogram", "Metrics", "MetricsServer", "serve_metrics"]


@dataclass(frozen=True)
class LatenessHistogram:
    """How late kills were delivered after their deadlines (seconds, the watchdog's clock)."""

    count: int
    """Kills measured."""
    sum: float
    """Their lateness added up, seconds."""
    buckets: Tuple[Tuple[float, int], ...]
    """``(upper bound in seconds, kills at most that late)``, cumulative as in Prometheus,
    ending with ``(math.inf, count)``."""


@dataclass(frozen=True)
class Metrics:
    """A snapshot of what a watchdog counted since it was made (totals over every query, never
    per query), keyed by the Prometheus label values."""

    sessions: int
    """Queries registered now."""
    utilization: Optional[float]
    """The rate-limit utilization the watchdog last read (``get_utilization``), or None."""
    ended: Mapping[str, int]
    """Queries that ended, by outcome: ``success``, ``error_result``, ``killed``,
    ``no_result``, ``incomplete`` (see :meth:`WatchdogHandle.end`)."""
    ended_killed: Mapping[str, int]
    """Queries that ended killed, by kill kind."""
    kills: Mapping[str, int]
    """Kills by kind: ``ceiling``, ``startup``, ``linger``, ``idle``, ``no_progress``, ``output_blocked``,
    ``memory``, ``task_silent``, ``wakeup_missed``, ``unanswered``."""
    stalling_warnings: Mapping[str, int]
    """Stalling warnings by clock: ``idle``, ``no_progress``."""
    extensions: Mapping[str, int]
    """Idle-patience extensions by reason: ``high_utilization``, ``pre_write``."""
    kill_lateness: LatenessHistogram


def _metrics(text: str) -> Metrics:
    d = json.loads(text)
    frozen = lambda m: MappingProxyType(dict(m))  # noqa: E731
    lateness = d["kill_lateness"]
    return Metrics(
        sessions=d["sessions"],
        utilization=d["utilization"],
        ended=frozen(d["ended"]),
        ended_killed=frozen(d["ended_killed"]),
        kills=frozen(d["kills"]),
        stalling_warnings=frozen(d["stalling_warnings"]),
        extensions=frozen(d["extensions"]),
        kill_lateness=LatenessHistogram(
            count=lateness["count"],
            sum=lateness["sum"],
            buckets=tuple((math.inf if le is None else le, n) for le, n in lateness["buckets"]),
        ),
    )


class MetricsServer:
    """A running ``/metrics`` endpoint (made by :func:`serve_metrics`); a context manager that
    closes it."""

    def __init__(
        self, core: Any, sock: socket.socket, timeout: float, max_head: int, max_connections: int
    ) -> None:
        self._core = core
        self._sock = sock
        self._timeout = timeout
        self._max_head = max_head
        self._slots = threading.BoundedSemaphore(max_connections)
        self._closed = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        addr = sock.getsockname()
        self.host: str = addr[0]
        """The address it listens on."""
        self.port: int = addr[1]
        """The port it listens on (the one the system chose for ``port=0``)."""
        self._thread = threading.Thread(
            target=self._serve, name="agent-sdk-watchdog metrics", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://host:port/metrics``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop accepting and close the listening socket (idempotent). A scrape being answered
        finishes on its own thread."""
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self._thread.join()
        for s in (self._sock, self._wake_r, self._wake_w):
            s.close()

    def __enter__(self) -> "MetricsServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _serve(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self._sock, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while not self._closed.is_set():
                # A free slot first: more clients than max_connections wait in the backlog.
                if not self._slots.acquire(timeout=0.2):
                    continue
                ready = [key.fileobj for key, _ in sel.select()]
                if self._closed.is_set() or self._sock not in ready:
                    self._slots.release()
                    continue
                try:
                    conn, _ = self._sock.accept()
                except OSError:
                    # Out of descriptors and the like: wait a little rather than spin.
                    self._slots.release()
                    time.sleep(0.05)
                    continue
                try:
                    threading.Thread(target=self._connection, args=(conn,), daemon=True).start()
                except BaseException:  # noqa: BLE001 - no thread to be had: drop this one
                    conn.close()
                    self._slots.release()

    def _connection(self, conn: socket.socket) -> None:
        try:
            answer = self._read_and_answer(conn)
            if answer is None:
                return
            conn.settimeout(self._timeout)
            conn.sendall(answer)
            conn.shutdown(socket.SHUT_WR)
            # Take what the client still sends (a body we did not read) for a moment, so the
            # close does not reset the connection before it read the answer.
            conn.settimeout(min(self._timeout, 1.0))
            left = 64 * 1024
            while left > 0 and conn.recv(1024) and not self._closed.is_set():
                left -= 1024
        except OSError:
            pass
        finally:
            conn.close()
            self._slots.release()

    def _read_and_answer(self, conn: socket.socket) -> Optional[bytes]:
        """The core's answer to the request head, or None when the client closed, failed or
        took longer than the timeout for its whole head (dropped unanswered)."""
        deadline = time.monotonic() + self._timeout
        buf = b""
        while True:
            if len(buf) >= self._max_head:
                return self._core.scrape_response(None)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            conn.settimeout(left)
            chunk = conn.recv(self._max_head - len(buf))
            if not chunk:
                return None
            # The end may straddle two reads: look from a little before the new bytes.
            start = max(0, len(buf) - 3)
            buf += chunk
            end = _native.head_end(buf[start:])
            if end is not None:
                return self._core.scrape_response(buf[: start + end])


def serve_metrics(
    watchdog: "Watchdog",
    port: Optional[int] = None,
    host: Optional[str] = None,
    *,
    timeout: Optional[float] = None,
    max_head: Optional[int] = None,
    max_connections: Optional[int] = None,
) -> MetricsServer:
    """Serve ``watchdog``'s metrics for Prometheus on ``host:port`` (default
    ``127.0.0.1:9464``) from a daemon thread, until :meth:`MetricsServer.close`. ``GET`` and
    ``HEAD`` of ``/metrics`` answer 200 (format 0.0.4); another path 404; another method 405; a
    request that is not HTTP 400; a request head over ``max_head`` bytes (default 8 KiB) 431. A
    client gets ``timeout`` seconds (default 5) for its whole request head (then it is dropped
    unanswered); at most ``max_connections`` (default 64) are served at once (more wait in the
    listen backlog). Every answer closes its connection. The answers, the defaults and the
    rules of these values are every host's (the Rust core's).

    The port is bound before this returns: a port in use raises :class:`OSError` naming the
    address (``port=0`` takes a free one, see :attr:`MetricsServer.port`)."""
    d = _native.rules_tables()["metrics"]
    given = {"host": host, "port": port, "timeout": timeout, "max_head": max_head, "max_connections": max_connections}
    host, port, timeout, max_head, max_connections = _native.metrics_bounds(
        *(d[k] if v is None else v for k, v in given.items())
    )
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.create_server((host, port), family=family)
    except OSError as e:
        raise OSError(e.errno, f"serve_metrics: cannot listen on {host}:{port}: {e.strerror or e}") from e
    return MetricsServer(watchdog._core, sock, timeout, max_head, max_connections)

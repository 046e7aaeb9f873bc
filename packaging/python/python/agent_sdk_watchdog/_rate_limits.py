"""The rate-limit monitor: ``rate_limit_event`` messages merged into one reading by the
core's rules, and the reading as a line or an ISO-8601 reset time."""

from __future__ import annotations

import time
from types import MappingProxyType
from typing import Any, Callable, Dict, Mapping, Optional

from . import _native
from ._durations import _number

RATE_LIMIT_DEFAULTS: Mapping[str, Any] = MappingProxyType(dict(_native.rate_limit_defaults()))
"""warn_at 0.85, fallback_window ``"five_hour"``."""


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

"""Durations and numbers as the in-process API takes them, checked by the core's parser."""

from __future__ import annotations

import datetime
from typing import Any, Union

from . import _native

Seconds = Union[str, int, float, datetime.timedelta]
"""A duration: ``"90s"``, ``"10m"``, ``"1h30m"``, a number of seconds, or a ``timedelta``."""


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

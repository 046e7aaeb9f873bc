"""The SDK warning filter: a listed warning category shown once per process, the rest counted
by the core's de-duplication."""

from __future__ import annotations

import warnings
from types import MappingProxyType
from typing import Any, Callable, Mapping, Optional, Sequence, Type, Union

from . import _native

SHADOWED_CATEGORY = "claude_agent_sdk.types.CanUseToolShadowedWarning"
"""The SDK's warning for ``can_use_tool`` beside bare MCP tool names in ``allowed_tools``."""

WARNING_FILTER_DEFAULTS: Mapping[str, Any] = MappingProxyType({"categories": (SHADOWED_CATEGORY,)})


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

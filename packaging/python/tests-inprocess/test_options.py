"""Every option's default and range error (the core's rules, in the core's words)."""

import datetime
import math

import pytest

import agent_sdk_watchdog as w

MIN = 60.0


def test_watchdog_defaults_are_the_cores():
    assert dict(w.WATCHDOG_DEFAULTS) == {
        "idle": 10 * MIN,
        "no_progress": 30 * MIN,
        "startup": 3 * MIN,
        "linger": 11 * MIN,
        "ceiling": None,
        "extend_factor": 2.0,
        "high_utilization": 0.9,
        "warn_at": 0.8,
        "write_tools": ("Write", "Edit", "MultiEdit", "NotebookEdit"),
    }
    assert dict(w.create_watchdog(now=lambda: 0.0).config) == dict(w.WATCHDOG_DEFAULTS)


def test_defaults_are_read_only():
    with pytest.raises(TypeError):
        w.WATCHDOG_DEFAULTS["idle"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        w.RATE_LIMIT_DEFAULTS["warn_at"] = 1  # type: ignore[index]


@pytest.mark.parametrize(
    "option,value,message",
    [
        ("idle", 0, "idle must be a duration > 0, got 0"),
        ("idle", -1, "idle must be a duration > 0, got -1"),
        ("idle", math.nan, "idle must be a duration > 0, got NaN"),
        ("idle", math.inf, "idle must be a duration > 0, got inf"),
        ("idle", "ten", 'idle must be a duration such as 90s, 10m, 1h30m or 250ms, at most 365d, got "ten"'),
        ("no_progress", 0, "no_progress must be a duration > 0, got 0"),
        ("startup", -0.5, "startup must be a duration > 0, got -0.5"),
        ("linger", 0, "linger must be a duration > 0, got 0"),
        ("ceiling", 0, "ceiling must be a duration > 0, got 0"),
        ("extend_factor", 0.5, "extend_factor must be a number >= 1, got 0.5"),
        ("high_utilization", 1.5, "high_utilization must be a number in [0, 1], got 1.5"),
        ("high_utilization", -0.1, "high_utilization must be a number in [0, 1], got -0.1"),
        ("warn_at", 0, "warn_at must be a number in (0, 1], got 0"),
        ("warn_at", 1.5, "warn_at must be a number in (0, 1], got 1.5"),
    ],
)
def test_a_bad_value_names_the_option_the_range_and_the_value(option, value, message):
    with pytest.raises(ValueError) as e:
        w.create_watchdog(**{option: value})
    assert str(e.value) == message


def test_the_per_query_ceiling_is_checked_too():
    with pytest.raises(ValueError, match=r"^hard_ceiling must be a duration > 0, got 0$"):
        w.create_watchdog(now=lambda: 0.0).register(hard_ceiling=0)


@pytest.mark.parametrize("value", [True, None.__class__, [1]])
def test_a_value_of_the_wrong_type_is_a_type_error(value):
    with pytest.raises(TypeError, match="idle"):
        w.create_watchdog(idle=value)


def test_durations_take_text_numbers_and_timedeltas_and_none_keeps_the_default():
    c = w.create_watchdog(
        idle="90s", no_progress=datetime.timedelta(minutes=20), startup=5, linger="1h30m",
        ceiling=3600, extend_factor=1, high_utilization=0.5, warn_at=1, write_tools=["Bash"],
        now=lambda: 0.0,
    ).config
    assert (c["idle"], c["no_progress"], c["startup"], c["linger"], c["ceiling"]) == (90, 1200, 5, 5400, 3600)
    assert (c["extend_factor"], c["high_utilization"], c["warn_at"]) == (1, 0.5, 1)
    assert c["write_tools"] == ("Bash",)
    assert w.create_watchdog(idle=None, now=lambda: 0.0).config["idle"] == 600


def test_rate_limit_defaults_and_range_errors():
    assert dict(w.RATE_LIMIT_DEFAULTS) == {"warn_at": 0.85, "fallback_window": "five_hour"}
    for bad, shown in [(1.5, "1.5"), (-0.1, "-0.1"), (math.nan, "NaN")]:
        with pytest.raises(ValueError) as e:
            w.create_rate_limit_monitor(warn_at=bad)
        assert str(e.value) == f"warn_at must be a number in [0, 1], got {shown}"
    with pytest.raises(ValueError, match="fallback_window"):
        w.create_rate_limit_monitor(fallback_window="")

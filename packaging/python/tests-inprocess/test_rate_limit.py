"""The rate-limit monitor's merge rules, on the cases of the core's tests
(crates/core/tests/rate_limit.rs: the reference's 29 checks and the golden one-liners)."""

import copy

import pytest

import agent_sdk_watchdog as w
from claude_agent_sdk import RateLimitEvent, RateLimitInfo, SystemMessage

RESET_S = 1_900_003_600
NOW = RESET_S - 3600  # epoch seconds


def monitor(**kw):
    return w.create_rate_limit_monitor(**kw)


def allowed():
    return {
        "status": "allowed",
        "resetsAt": RESET_S,
        "rateLimitType": "five_hour",
        "overageStatus": "rejected",
        "overageDisabledReason": "out_of_credits",
        "isUsingOverage": False,
        "unifiedWindows": {
            "five_hour": {"utilization": 0.11, "resetsAt": RESET_S, "status": "allowed"},
            "seven_day": {"utilization": 0.06, "resetsAt": RESET_S + 400_000, "status": "allowed"},
        },
    }


def allowed_warning_99():
    return {"status": "allowed_warning", "resetsAt": RESET_S, "rateLimitType": "five_hour", "utilization": 0.99}


def sdk_event(info):
    """What the SDK's parser yields for a rate_limit_event line (raw = the wire's info)."""
    return RateLimitEvent(
        rate_limit_info=RateLimitInfo(
            status=info["status"], resets_at=info.get("resetsAt"), utilization=info.get("utilization"), raw=info
        ),
        uuid="u",
        session_id="s",
    )


def test_ref_01_02_the_allowed_shape_derives_utilization_from_its_own_window_and_keeps_overage():
    m = monitor()
    m.note(allowed(), now=NOW)
    r = m.latest()
    assert r["utilization"] == 0.11 and r["overage_status"] == "rejected"


def test_ref_03_04_allowed_warning_keeps_its_top_level_value_and_overage_carries_forward():
    m = monitor()
    m.note(allowed(), now=NOW)
    m.note(allowed_warning_99(), now=NOW)
    r = m.latest()
    assert r["utilization"] == 0.99
    assert (r["overage_status"], r["overage_disabled_reason"]) == ("rejected", "out_of_credits")


def test_ref_05_06_one_warning_with_the_merged_reading_and_none_on_a_second_crossing():
    m = monitor()
    assert m.note(allowed(), now=NOW) is None
    warned = m.note(allowed_warning_99(), now=NOW)
    assert warned is not None and warned["utilization"] == 0.99 and warned["overage_status"] == "rejected"
    assert m.note(allowed_warning_99(), now=NOW + 1) is None


def test_ref_07_note_does_not_mutate_the_payload():
    info = allowed()
    clone = copy.deepcopy(info)
    m = monitor()
    m.note(info, now=NOW)
    m.note(allowed_warning_99(), now=NOW)
    assert info == clone


def test_ref_08_to_12_active_expires_at_the_reset_instant_latest_keeps_the_stale_reading():
    m = monitor()
    assert m.active(now=NOW) is None
    m.note(allowed(), now=NOW)
    assert m.active(now=RESET_S - 0.001) is not None
    assert m.active(now=RESET_S) is None
    assert m.active(now=RESET_S + 1) is None
    assert m.latest()["utilization"] == 0.11


def test_ref_13_a_reading_without_resets_at_never_goes_stale():
    m = monitor()
    m.note({"status": "allowed", "utilization": 0.3}, now=NOW)
    assert m.active(now=1e12) is not None and m.utilization(now=1e12) == 0.3


def test_ref_14_15_warn_at_changes_the_verdict():
    reading = {"status": "allowed", "utilization": 0.6}
    assert monitor(warn_at=0.5).note(reading, now=NOW)["utilization"] == 0.6
    assert monitor().note(reading, now=NOW) is None


def test_ref_16_17_the_fallback_window_is_read_from_a_bare_allowed_frame():
    bare = {"status": "allowed", "unifiedWindows": {"five_hour": {"utilization": 0.1}, "seven_day": {"utilization": 0.7}}}
    m = monitor(fallback_window="seven_day")
    m.note(bare, now=NOW)
    assert m.latest()["utilization"] == 0.7
    d = monitor()
    d.note(bare, now=NOW)
    assert d.latest()["utilization"] == 0.1


def test_ref_18_19_an_injected_clock():
    t = [NOW]
    m = w.create_rate_limit_monitor(now=lambda: t[0])
    m.note(allowed())
    t[0] = RESET_S - 0.001
    assert m.active() is not None
    t[0] = RESET_S
    assert m.active() is None


def test_ref_23_the_threshold_is_inclusive():
    assert monitor().note({"status": "allowed_warning", "utilization": 0.85}, now=NOW) is not None


def test_ref_24_25_an_unrelated_message_returns_nothing_and_changes_nothing():
    m = monitor()
    assert m.observe(SystemMessage(subtype="init", data={}), now=NOW) is None
    assert m.observe({"type": "result", "rate_limit_info": {"status": "rejected"}}, now=NOW) is None
    assert m.latest() is None


def test_ref_26_27_observe_takes_the_sdks_rate_limit_event_and_holds_it():
    m = monitor()
    warned = m.observe(sdk_event({"status": "allowed_warning", "utilization": 0.9}), now=NOW)
    assert warned is not None and warned["utilization"] == 0.9
    assert m.latest()["utilization"] == 0.9
    # The allowed shape: utilization only in unifiedWindows, which the SDK keeps in `raw`.
    a = monitor()
    a.observe(sdk_event(allowed()), now=NOW)
    assert a.latest()["utilization"] == 0.11


def test_ref_28_29_monitors_are_independent_and_each_warns_once():
    a, b = monitor(), monitor()
    a.note(allowed_warning_99(), now=NOW)
    assert b.latest() is None
    assert b.note(allowed_warning_99(), now=NOW) is not None
    assert a.note(allowed_warning_99(), now=NOW) is None
    assert b.note(allowed_warning_99(), now=NOW) is None


def test_reset_forgets_and_arms_the_warning_again():
    m = monitor()
    m.note(allowed_warning_99(), now=NOW)
    m.reset()
    assert m.latest() is None
    assert m.note(allowed_warning_99(), now=NOW) is not None


@pytest.mark.parametrize(
    "reading,line",
    [
        (
            {"status": "allowed_warning", "utilization": 0.99, "overage_status": "rejected",
             "overage_disabled_reason": "out_of_credits", "resets_at": 1_900_003_600},
            "allowed_warning at 99%, overage rejected (out_of_credits), resets at 2030-03-17T18:46:40.000Z",
        ),
        ({"status": "allowed"}, "allowed"),
        ({"status": "rejected", "overage_status": "rejected"}, "rejected, overage rejected"),
        ({"status": "allowed", "overage_disabled_reason": "out_of_credits"}, "allowed (out_of_credits)"),
        ({"status": "allowed", "utilization": 0}, "allowed at 0%"),
        ({"status": "allowed", "utilization": None}, "allowed"),
        ({"status": "allowed", "resets_at": 0}, "allowed, resets at 1970-01-01T00:00:00.000Z"),
        ({"status": "allowed", "resets_at": 1.5}, "allowed, resets at 1970-01-01T00:00:01.500Z"),
        ({"status": "allowed", "utilization": 1.234}, "allowed at 123%"),
        ({"status": "allowed", "utilization": 0.125}, "allowed at 13%"),
    ],
)
def test_golden_one_liners(reading, line):
    assert w.format_rate_limit_reading(reading) == line


def test_a_monitors_reading_formats_and_gives_its_reset_time():
    m = monitor()
    m.note(allowed_warning_99(), now=NOW)
    assert w.format_rate_limit_reading(m.latest()) == "allowed_warning at 99%, resets at 2030-03-17T18:46:40.000Z"
    assert w.rate_limit_reset_iso(m.latest()) == "2030-03-17T18:46:40.000Z"
    assert w.rate_limit_reset_iso({"status": "allowed"}) is None

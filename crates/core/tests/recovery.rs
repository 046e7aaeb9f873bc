//! The recovery decision table: every trigger, every non-trigger, the single notice of a failed
//! continuation, fail-closed handling of unknown values, markers and the in-memory ledger.
//! Result lines come from the real CLI (testdata/) where one exists.

mod common;

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::Value;
use watchdog_core::rate_limit::{RateLimitConfig, RateLimitMonitor};
use watchdog_core::recovery::*;
use watchdog_core::{facts::ClaudeSessionId, facts::ResultFacts, KillKind, LineView, Outcome};

/// A session id as the registry hands it over.
fn sid(id: &str) -> ClaudeSessionId {
    ClaudeSessionId::parse(id).unwrap()
}

const ID: &str = "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc";
const T: u64 = 1_796_030_000_000;

fn capture(name: &str) -> Vec<Value> {
    common::capture_stdout(name)
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

fn example(key: &str) -> Value {
    let path = common::testdata_dir().join("examples.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    all[key]["json"].clone()
}

/// The outcome the registry reports for a `result` line (same rule as `Outcome`'s docs).
fn outcome_of(result: &LineView<'_>) -> Outcome {
    let facts = ResultFacts::of_line(result);
    if facts.is_error_result() {
        Outcome::ErrorResult(Box::new(facts))
    } else if facts.stopped_mid_task() {
        Outcome::Incomplete
    } else {
        Outcome::Success
    }
}

/// The facts a host gives for a run that ended with this `result` line (its session id is the
/// one the registry read from the same lines).
fn facts_of_result(line: &Value) -> TerminalFacts {
    let v = LineView::from_value(line).unwrap();
    let mut facts = TerminalFacts::new(outcome_of(&v), T).with_result(&ResultFacts::of_line(&v));
    if let Some(id) = v.session_id() {
        facts = facts.with_session_id(ClaudeSessionId::parse(&id).unwrap());
    }
    facts
}

fn result_of(lines: &[Value]) -> &Value {
    lines
        .iter()
        .rev()
        .find(|l| l["type"] == "result")
        .expect("a result line")
}

fn error(
    subtype: &str,
    terminal_reason: &str,
    api_error: Option<&str>,
    status: Option<u16>,
) -> Outcome {
    Outcome::ErrorResult(Box::new(ResultFacts {
        subtype: Some(subtype.into()),
        terminal_reason: Some(terminal_reason.into()),
        stop_reason: Some("stop_sequence".into()),
        api_error: api_error.map(Into::into),
        api_error_status: status,
        ..ResultFacts::default()
    }))
}

fn max_tokens() -> Outcome {
    error("success", "api_error", Some("max_output_tokens"), None)
}

fn facts(outcome: Outcome) -> TerminalFacts {
    TerminalFacts::new(outcome, T).with_session_id(sid(ID))
}

fn all_on() -> Recovery {
    Recovery::default()
        .with_trigger(Trigger::AfterKill, true)
        .with_trigger(Trigger::RateLimitWait, true)
}

fn fresh(r: &Recovery, f: &TerminalFacts) -> Decision {
    r.decide(f, &LedgerState::Fresh)
}

fn continued(trigger: Trigger) -> LedgerState {
    let f = facts(max_tokens()).with_usage(Some(0.0032), Some(4));
    LedgerState::Continued(Marker {
        version: MARKER_VERSION,
        session_id: ID.into(),
        trigger,
        // The marker was written when the first run ended, a minute before the run decided here.
        created_at_ms: T - 60_000,
        original: f.summary(),
        prompt: Recovery::default().prompt(Trigger::OutputLimit).into(),
        wait_until_ms: None,
    })
}

// ---------------------------------------------------------------------------------------------
// Triggers.

#[test]
fn output_limit_from_the_real_cli_result_continues_once_with_the_default_prompt() {
    let lines = capture("s5_max_tokens.capture.jsonl");
    let f = facts_of_result(result_of(&lines));
    assert_eq!(f.session_id.as_deref(), Some(ID));
    assert_eq!((f.num_turns, f.cost_usd), (Some(4), Some(0.0032)));
    let d = fresh(&Recovery::default(), &f);
    let Decision::Continue {
        trigger,
        prompt,
        wait_until,
    } = d
    else {
        panic!("{d:?}")
    };
    assert_eq!(trigger, Trigger::OutputLimit);
    assert!(prompt.contains("from where it stopped"));
    assert!(prompt.contains("in smaller pieces"));
    assert!(prompt.contains("without recap"));
    assert_eq!(wait_until, None);
}

#[test]
fn output_limit_can_be_turned_off_and_its_prompt_replaced() {
    let f = facts(max_tokens());
    let off = Recovery::default().with_trigger(Trigger::OutputLimit, false);
    assert_eq!(
        fresh(&off, &f),
        Decision::Nothing(Skip::Disabled(Trigger::OutputLimit))
    );
    let custom = Recovery::default()
        .with_prompt(Trigger::OutputLimit, "keep going, smaller steps")
        .unwrap();
    assert!(matches!(
        fresh(&custom, &f),
        Decision::Continue { prompt, .. } if prompt == "keep going, smaller steps"
    ));
}

#[test]
fn after_kill_continues_idle_no_progress_and_linger_kills_only_when_enabled() {
    for kind in [KillKind::Idle, KillKind::NoProgress, KillKind::Linger] {
        let f = facts(Outcome::Killed { kind });
        assert_eq!(
            fresh(&Recovery::default(), &f),
            Decision::Nothing(Skip::Disabled(Trigger::AfterKill)),
            "{kind}: opt-in"
        );
        assert_eq!(
            fresh(&all_on(), &f),
            Decision::Continue {
                trigger: Trigger::AfterKill,
                prompt: Recovery::default().prompt(Trigger::AfterKill).into(),
                wait_until: None
            },
            "{kind}"
        );
    }
}

#[test]
fn ceiling_and_startup_kills_are_never_continued() {
    for kind in [KillKind::Ceiling, KillKind::Startup] {
        let f = facts(Outcome::Killed { kind });
        assert_eq!(
            fresh(&all_on(), &f),
            Decision::Nothing(Skip::KillKind(kind))
        );
    }
}

#[test]
fn rate_limit_rejection_from_the_real_cli_waits_for_the_reset_plus_margin() {
    let lines = capture("s3_429_rejected_fast_gwjwt.capture.jsonl");
    let mut monitor = RateLimitMonitor::new(RateLimitConfig::default());
    for l in &lines {
        monitor.observe(T, &LineView::from_value(l).unwrap());
    }
    let f = facts_of_result(result_of(&lines)).with_rate_limits(&monitor);
    assert_eq!(f.rate_limit_resets_at_ms, Some(1_796_034_707_000));
    assert_eq!(
        fresh(&Recovery::default(), &f),
        Decision::Nothing(Skip::Disabled(Trigger::RateLimitWait)),
        "opt-in"
    );
    assert_eq!(
        fresh(&all_on(), &f),
        Decision::Continue {
            trigger: Trigger::RateLimitWait,
            prompt: Recovery::default().prompt(Trigger::RateLimitWait).into(),
            wait_until: Some(1_796_034_707_000 + 30_000)
        }
    );
    let no_margin = all_on().with_reset_margin(Duration::ZERO);
    assert!(matches!(
        fresh(&no_margin, &f),
        Decision::Continue {
            wait_until: Some(1_796_034_707_000),
            ..
        }
    ));
}

#[test]
fn a_429_result_with_a_known_reset_is_a_trigger_without_one_it_is_not() {
    let f = facts(error("success", "api_error", None, Some(429)));
    assert_eq!(fresh(&all_on(), &f), Decision::Nothing(Skip::ResetUnknown));
    let f = f.with_rejection(Some(T + 60_000));
    assert!(matches!(
        fresh(&all_on(), &f),
        Decision::Continue { trigger: Trigger::RateLimitWait, wait_until: Some(w), .. } if w == T + 90_000
    ));
    // The real API-key 429 (retries exhausted, no rate-limit frame): no reset known.
    let real = facts_of_result(&example(
        "result/success is_error=True terminal_reason=api_error",
    ));
    let Outcome::ErrorResult(r) = &real.outcome else {
        panic!("not an error result: {:?}", real.outcome)
    };
    assert_eq!(r.api_error_status, Some(429));
    assert_eq!(r.terminal_reason.as_deref(), Some("api_error"));
    assert_eq!(r.api_error, None);
    assert_eq!(
        fresh(&all_on(), &real),
        Decision::Nothing(Skip::ResetUnknown)
    );
}

#[test]
fn a_rejection_whose_reset_already_passed_is_known_not_unknown() {
    let mut m = RateLimitMonitor::new(RateLimitConfig::default());
    let reset_s = T / 1000 - 60;
    let line = format!(
        r#"{{"type":"rate_limit_event","rate_limit_info":{{"status":"rejected","resetsAt":{reset_s},"rateLimitType":"five_hour"}}}}"#
    );
    let _ = m.observe(T - 120_000, &LineView::parse(line.as_bytes()).unwrap());
    let f = facts(error("success", "api_error", None, Some(429))).with_rate_limits(&m);
    assert_eq!(f.rate_limit_resets_at_ms, Some(reset_s * 1000));
    // The reset (plus margin) passed before the run ended: continue at once, not "unknown".
    assert!(matches!(
        fresh(&all_on(), &f),
        Decision::Continue { trigger: Trigger::RateLimitWait, wait_until: Some(w), .. } if w == T
    ));
}

#[test]
fn a_reset_beyond_max_wait_is_not_waited_for_and_the_cap_is_inclusive() {
    let r = all_on().with_reset_margin(Duration::ZERO);
    let six_h = 6 * 3_600_000;
    let at_cap =
        facts(error("success", "api_error", None, Some(429))).with_rejection(Some(T + six_h));
    assert!(matches!(fresh(&r, &at_cap), Decision::Continue { .. }));
    let beyond =
        facts(error("success", "api_error", None, Some(429))).with_rejection(Some(T + six_h + 1));
    assert_eq!(
        fresh(&r, &beyond),
        Decision::Nothing(Skip::WaitTooLong {
            until_ms: T + six_h + 1
        })
    );
    let longer = r.with_max_wait(Duration::from_secs(7 * 3600)).unwrap();
    assert!(matches!(fresh(&longer, &beyond), Decision::Continue { .. }));
}

#[test]
fn a_reset_already_past_continues_without_waiting() {
    let f = facts(error("success", "api_error", None, Some(429))).with_rejection(Some(T - 120_000));
    assert!(matches!(
        fresh(&all_on(), &f),
        Decision::Continue { wait_until: Some(w), .. } if w == T
    ));
}

// ---------------------------------------------------------------------------------------------
// Never a trigger.

#[test]
fn outcomes_that_are_never_continued() {
    let refusal = Outcome::ErrorResult(Box::new(ResultFacts {
        subtype: Some("success".into()),
        terminal_reason: Some("api_error".into()),
        stop_reason: Some("refusal".into()),
        api_error: Some("max_output_tokens".into()),
        api_error_status: None,
        ..ResultFacts::default()
    }));
    let cases = [
        (Outcome::Success, Skip::NotATrigger),
        (Outcome::Incomplete, Skip::NotATrigger),
        (Outcome::NoResult, Skip::NotATrigger),
        (
            error("error_max_turns", "max_turns", None, None),
            Skip::NotATrigger,
        ),
        (
            error("error_max_budget_usd", "max_budget", None, None),
            Skip::NotATrigger,
        ),
        (
            error("error_during_execution", "aborted_tools", None, None),
            Skip::NotATrigger,
        ),
        (refusal, Skip::NotATrigger),
    ];
    for (outcome, skip) in cases {
        assert_eq!(
            fresh(&all_on(), &facts(outcome.clone())),
            Decision::Nothing(skip),
            "{outcome:?}"
        );
    }
}

#[test]
fn the_real_sigint_result_is_not_continued() {
    let f = facts_of_result(&example(
        "result/error_during_execution is_error=True terminal_reason=aborted_tools",
    ));
    assert_eq!(fresh(&all_on(), &f), Decision::Nothing(Skip::NotATrigger));
}

#[test]
fn a_user_interrupt_wins_over_every_trigger() {
    for outcome in [
        max_tokens(),
        Outcome::Killed {
            kind: KillKind::Idle,
        },
    ] {
        let f = facts(outcome).with_user_interrupt(true);
        assert_eq!(
            fresh(&all_on(), &f),
            Decision::Nothing(Skip::UserInterrupted)
        );
    }
}

#[test]
fn credits_required_is_never_waited_for() {
    let f = facts(error("success", "api_error", None, Some(429)))
        .with_rejection(Some(T + 60_000))
        .with_credits_required(true);
    assert_eq!(
        fresh(&all_on(), &f),
        Decision::Nothing(Skip::CreditsRequired)
    );
}

#[test]
fn unknown_values_fail_closed() {
    let cases = [
        error(
            "success",
            "brand_new_reason",
            Some("max_output_tokens"),
            None,
        ),
        error(
            "error_something_new",
            "api_error",
            Some("max_output_tokens"),
            None,
        ),
        error("success", "api_error", Some("overloaded_error"), Some(529)),
        error("success", "api_error", None, None),
        Outcome::ErrorResult(Box::new(ResultFacts {
            subtype: None,
            terminal_reason: Some("api_error".into()),
            stop_reason: None,
            api_error: Some("max_output_tokens".into()),
            api_error_status: None,
            ..ResultFacts::default()
        })),
        Outcome::ErrorResult(Box::new(ResultFacts {
            subtype: Some("success".into()),
            terminal_reason: None,
            stop_reason: None,
            api_error: Some("max_output_tokens".into()),
            api_error_status: None,
            ..ResultFacts::default()
        })),
    ];
    for outcome in cases {
        assert_eq!(
            fresh(&all_on(), &facts(outcome.clone())),
            Decision::Nothing(Skip::Unrecognised),
            "{outcome:?}"
        );
    }
}

#[test]
fn without_a_valid_session_id_nothing_is_continued() {
    let none = TerminalFacts::new(max_tokens(), T);
    assert_eq!(
        fresh(&all_on(), &none),
        Decision::Nothing(Skip::NoSessionId)
    );
    let bad = TerminalFacts::new(max_tokens(), T).with_session_id(sid("../../etc"));
    assert_eq!(fresh(&all_on(), &bad), Decision::Nothing(Skip::NoSessionId));
}

#[test]
fn a_disabled_policy_never_continues() {
    let r = Recovery::disabled();
    for t in [
        Trigger::OutputLimit,
        Trigger::AfterKill,
        Trigger::RateLimitWait,
    ] {
        assert!(!r.is_enabled(t));
    }
    assert_eq!(
        fresh(&r, &facts(max_tokens())),
        Decision::Nothing(Skip::Disabled(Trigger::OutputLimit))
    );
}

// ---------------------------------------------------------------------------------------------
// At most one continuation per chain.

#[test]
fn a_continuation_that_hits_a_trigger_again_gives_exactly_one_notice_with_the_facts() {
    let again = facts(max_tokens()).with_usage(Some(0.01), Some(5));
    let d = Recovery::default().decide(&again, &continued(Trigger::OutputLimit));
    let Decision::Notice(n) = d else {
        panic!("{d:?}")
    };
    assert_eq!(n.session_id, ID);
    assert_eq!(
        (n.trigger, n.again),
        (Trigger::OutputLimit, Trigger::OutputLimit)
    );
    assert_eq!(
        (n.first.num_turns, n.first.cost_usd),
        (Some(4), Some(0.0032))
    );
    assert_eq!(
        (n.continued.num_turns, n.continued.cost_usd),
        (Some(5), Some(0.01))
    );
    assert_eq!(n.options, ManualOption::ALL);
    let text = n.to_string();
    for needle in [
        ID,
        "first run:     error_result (api_error: max_output_tokens), 4 turns, $0.0032",
        "continued run: error_result (api_error: max_output_tokens), 5 turns, $0.0100",
        &format!("claude --resume {ID} -p"),
        "--fork-session",
        "start fresh",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
}

#[test]
fn a_continuation_never_continues_again_whatever_the_trigger() {
    let r = all_on();
    for outcome in [
        max_tokens(),
        Outcome::Killed {
            kind: KillKind::Idle,
        },
    ] {
        for state in [
            continued(Trigger::OutputLimit),
            continued(Trigger::AfterKill),
        ] {
            let d = r.decide(&facts(outcome.clone()), &state);
            assert!(matches!(d, Decision::Notice(_)), "{d:?}");
        }
    }
    // A continuation that succeeds, or ends on a non-trigger, is simply over.
    for outcome in [
        Outcome::Success,
        Outcome::Killed {
            kind: KillKind::Ceiling,
        },
    ] {
        let d = r.decide(&facts(outcome), &continued(Trigger::OutputLimit));
        assert_eq!(d, Decision::Nothing(Skip::ContinuationEnded));
    }
    // A trigger that is off is not "hit".
    let d = Recovery::default().decide(
        &facts(Outcome::Killed {
            kind: KillKind::Idle,
        }),
        &continued(Trigger::OutputLimit),
    );
    assert_eq!(d, Decision::Nothing(Skip::ContinuationEnded));
}

/// Two runs race on one session: the winner claims the marker and continues; the loser,
/// which continued nothing, must neither continue nor give the notice (the notice is the
/// continuation's, with the continuation's facts), whenever it ends relative to the marker
/// and whatever trigger it shows. The winner's continuation still gets its one notice.
#[test]
fn a_run_that_lost_the_race_neither_continues_nor_gives_the_notice() {
    let r = all_on();
    let LedgerState::Continued(m) = continued(Trigger::OutputLimit) else {
        unreachable!()
    };
    for ended_at_ms in [m.created_at_ms - 1, m.created_at_ms, m.created_at_ms + 1, T] {
        for outcome in [
            max_tokens(),
            Outcome::Killed {
                kind: KillKind::Idle,
            },
            Outcome::Success,
        ] {
            let mut loser = facts(outcome.clone()).with_role(ChainRole::First);
            loser.ended_at_ms = ended_at_ms;
            let d = r.decide(&loser, &LedgerState::Continued(m.clone()));
            assert_eq!(
                d,
                Decision::Nothing(Skip::ContinuedElsewhere),
                "{outcome:?} at {ended_at_ms}"
            );
        }
    }
    let winner = facts(max_tokens()).with_role(ChainRole::Continuation);
    assert!(matches!(
        r.decide(&winner, &LedgerState::Continued(m.clone())),
        Decision::Notice(_)
    ));
    // A continuation ends after its marker by construction: its role, not the clock, decides.
    let mut early = winner.clone();
    early.ended_at_ms = m.created_at_ms;
    assert!(matches!(
        r.decide(&early, &LedgerState::Continued(m)),
        Decision::Notice(_)
    ));
}

#[test]
fn after_the_notice_nothing_more_is_ever_said() {
    let LedgerState::Continued(m) = continued(Trigger::OutputLimit) else {
        unreachable!()
    };
    let state = LedgerState::Noticed(m);
    for outcome in [max_tokens(), Outcome::Success] {
        assert_eq!(
            all_on().decide(&facts(outcome), &state),
            Decision::Nothing(Skip::AlreadyNoticed)
        );
    }
}

#[test]
fn the_full_chain_through_the_ledger() {
    let r = Recovery::default();
    let ledger = MemoryLedger::default();
    let first = facts(max_tokens()).with_usage(Some(0.0032), Some(4));
    let d = r.decide(&first, &ledger.get(ID).unwrap().into());
    let marker = Marker::for_continue(&first, &d).unwrap();
    assert_eq!(ledger.try_claim(ID, &marker).unwrap(), Claim::Won);
    // A duplicate event for the same run: the marker exists, so no second continuation.
    assert_eq!(
        ledger.try_claim(ID, &marker).unwrap(),
        Claim::AlreadyClaimed
    );
    let state: LedgerState = ledger.get(ID).unwrap().into();
    assert!(matches!(state, LedgerState::Continued(_)));
    // The first run's outcome seen again (a duplicate event) is not the continued run: no
    // notice yet, and certainly no continuation.
    assert_eq!(r.decide(&first, &state), Decision::Nothing(Skip::Duplicate));
    // The continued run ends later and hits the trigger again: the one notice.
    let again = TerminalFacts::new(max_tokens(), T + 60_000).with_session_id(sid(ID));
    let d = r.decide(&again, &state);
    assert!(matches!(d, Decision::Notice(_)));
    assert!(
        ledger.record_notice(ID).unwrap(),
        "the first notice is shown"
    );
    assert!(!ledger.record_notice(ID).unwrap(), "never twice");
    let d = r.decide(&again, &ledger.get(ID).unwrap().into());
    assert_eq!(d, Decision::Nothing(Skip::AlreadyNoticed));
}

// ---------------------------------------------------------------------------------------------
// Markers, ledger, session ids, policy.

#[test]
fn marker_is_json_with_trigger_time_original_facts_and_prompt() {
    let f = facts(error("success", "api_error", None, Some(429)))
        .with_rejection(Some(T + 60_000))
        .with_usage(Some(0.0), Some(1));
    let d = fresh(&all_on(), &f);
    let m = Marker::for_continue(&f, &d).unwrap();
    let v: Value = serde_json::from_str(&m.to_json()).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["session_id"], ID);
    assert_eq!(v["trigger"], "rate_limit_wait");
    assert_eq!(v["created_at_ms"], T);
    assert_eq!(v["original"]["outcome"], "error_result");
    assert_eq!(v["original"]["api_error_status"], 429);
    assert_eq!(v["original"]["rate_limit_resets_at_ms"], T + 60_000);
    assert_eq!(
        v["prompt"],
        Recovery::default().prompt(Trigger::RateLimitWait)
    );
    assert_eq!(v["wait_until_ms"], T + 90_000);
    assert_eq!(Marker::from_json(&m.to_json()).unwrap(), m);
    assert!(matches!(
        Marker::from_json("{\"version\":1"),
        Err(LedgerError::Corrupt(_))
    ));
    assert!(Marker::for_continue(&f, &Decision::Nothing(Skip::NotATrigger)).is_none());
}

#[test]
fn sixteen_threads_racing_on_one_session_exactly_one_wins() {
    let ledger = Arc::new(MemoryLedger::default());
    let f = facts(max_tokens());
    let m = Marker::for_continue(&f, &fresh(&Recovery::default(), &f)).unwrap();
    let handles: Vec<_> = (0..16)
        .map(|_| {
            let (ledger, m) = (ledger.clone(), m.clone());
            std::thread::spawn(move || ledger.try_claim(ID, &m).unwrap())
        })
        .collect();
    let wins = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|c| *c == Claim::Won)
        .count();
    assert_eq!(wins, 1);
}

#[test]
fn the_ledger_rejects_invalid_session_ids_everywhere() {
    let ledger = MemoryLedger::default();
    let f = facts(max_tokens());
    let m = Marker::for_continue(&f, &fresh(&Recovery::default(), &f)).unwrap();
    for bad in [
        "",
        "x",
        "../90455ab9-05b5-4ba0-9d10-01a53fd0bc",
        "90455ab9/05b5-4ba0-9d10-01a53fd0bcdc",
    ] {
        assert!(matches!(
            ledger.try_claim(bad, &m),
            Err(LedgerError::InvalidSessionId(_))
        ));
        assert!(ledger.get(bad).is_err());
        assert!(ledger.record_notice(bad).is_err());
    }
    assert!(!ledger.record_notice(ID).unwrap(), "no marker, no notice");
}

#[test]
fn session_ids_must_be_canonical_uuids() {
    for ok in [ID, "77C4A83F-638F-4202-A655-FEE981C37E0C"] {
        assert!(validate_session_id(ok).is_ok(), "{ok}");
    }
    for bad in [
        "",
        "90455ab9-05b5-4ba0-9d10-01a53fd0bcd",
        "90455ab9-05b5-4ba0-9d10-01a53fd0bcdcc",
        "90455ab9x05b5-4ba0-9d10-01a53fd0bcdc",
        "90455ab9-05b5-4ba0-9d10-01a53fd0bcdg",
        "../../../../../../../../etc/passwd00",
        "90455ab9-05b5-4ba0-9d10-01a53fd0bcd\u{e9}",
    ] {
        assert!(validate_session_id(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        validate_session_id("nope").unwrap_err().to_string(),
        "invalid session id \"nope\": expected a UUID"
    );
}

#[test]
fn policy_defaults_and_validation() {
    let r = Recovery::default();
    assert!(r.is_enabled(Trigger::OutputLimit));
    assert!(!r.is_enabled(Trigger::AfterKill));
    assert!(!r.is_enabled(Trigger::RateLimitWait));
    assert_eq!(r.max_wait(), Duration::from_secs(6 * 3600));
    assert_eq!(r.reset_margin(), Duration::from_secs(30));
    assert!(r
        .prompt(Trigger::OutputLimit)
        .contains("output token limit"));
    assert!(r.clone().with_prompt(Trigger::AfterKill, "  ").is_err());
    assert_eq!(
        r.with_max_wait(Duration::ZERO).unwrap_err().to_string(),
        "max_wait must be a duration > 0, got 0ns"
    );
    assert_eq!(Trigger::RateLimitWait.to_string(), "rate_limit_wait");
}

#[test]
fn skips_explain_themselves() {
    assert_eq!(
        Skip::Disabled(Trigger::AfterKill).to_string(),
        "the after_kill trigger is off"
    );
    assert_eq!(
        Skip::WaitTooLong {
            until_ms: 1_900_003_600_000
        }
        .to_string(),
        "the rate limit resets at 2030-03-17T18:46:40.000Z, later than the maximum wait"
    );
}

fn arb_opt_str() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("success".to_owned())),
        Just(Some("api_error".to_owned())),
        Just(Some("max_output_tokens".to_owned())),
        Just(Some("error_max_turns".to_owned())),
        "[a-z_]{0,12}".prop_map(Some),
    ]
}

fn arb_outcome() -> impl Strategy<Value = Outcome> {
    let kinds = prop_oneof![
        Just(KillKind::Ceiling),
        Just(KillKind::Startup),
        Just(KillKind::Linger),
        Just(KillKind::Idle),
        Just(KillKind::NoProgress),
    ];
    prop_oneof![
        Just(Outcome::Success),
        Just(Outcome::NoResult),
        Just(Outcome::Incomplete),
        kinds.prop_map(|kind| Outcome::Killed { kind }),
        (
            arb_opt_str(),
            arb_opt_str(),
            arb_opt_str(),
            arb_opt_str(),
            proptest::option::of(0u16..600)
        )
            .prop_map(
                |(subtype, terminal_reason, stop_reason, api_error, api_error_status)| {
                    Outcome::ErrorResult(Box::new(ResultFacts {
                        subtype,
                        terminal_reason,
                        stop_reason,
                        api_error,
                        api_error_status,
                        ..ResultFacts::default()
                    }))
                }
            ),
    ]
}

proptest! {
    /// Whatever the facts: a continued chain never continues again, a continuation needs an
    /// enabled trigger and a valid session id, and a wait never exceeds max_wait.
    #[test]
    fn never_two_continuations_and_never_a_disallowed_one(
        outcome in arb_outcome(),
        reset in proptest::option::of(0u64..2 * T),
        interrupted in any::<bool>(),
        credits in any::<bool>(),
        enabled in proptest::array::uniform3(any::<bool>()),
        with_id in any::<bool>(),
    ) {
        let r = Recovery::disabled()
            .with_trigger(Trigger::OutputLimit, enabled[0])
            .with_trigger(Trigger::AfterKill, enabled[1])
            .with_trigger(Trigger::RateLimitWait, enabled[2]);
        let mut f = TerminalFacts::new(outcome, T)
            .with_user_interrupt(interrupted)
            .with_credits_required(credits);
        if let Some(reset) = reset {
            f = f.with_rejection(Some(reset));
        }
        if with_id {
            f = f.with_session_id(sid(ID));
        }
        for t in [Trigger::OutputLimit, Trigger::AfterKill] {
            let again = matches!(r.decide(&f, &continued(t)), Decision::Continue { .. });
            prop_assert!(!again);
        }
        if let Decision::Continue { trigger, wait_until, .. } = r.decide(&f, &LedgerState::Fresh) {
            prop_assert!(r.is_enabled(trigger));
            prop_assert!(with_id && !interrupted && !credits);
            if let Some(w) = wait_until {
                prop_assert!(w - T <= 6 * 3_600_000);
            }
        }
    }
}

/// Before the ledger is read: a run with no trigger, a trigger turned off or no session id to
/// resume is decided without it, as `decide` decides it on a fresh ledger; a continuable run
/// names its trigger and session. Only skips where a trigger was seen are told to the user.
#[test]
fn what_needs_no_ledger_is_decided_before_it_and_told_when_it_matters() {
    let idle = Outcome::Killed {
        kind: KillKind::Idle,
    };
    let r = all_on();
    assert_eq!(
        r.before_ledger(&facts(max_tokens())),
        Ok((Trigger::OutputLimit, sid(ID)))
    );
    let cases = [
        (
            r.clone(),
            TerminalFacts::new(max_tokens(), T),
            Skip::NoSessionId,
        ),
        (r.clone(), facts(Outcome::Success), Skip::NotATrigger),
        (
            Recovery::default().with_trigger(Trigger::OutputLimit, false),
            facts(max_tokens()),
            Skip::Disabled(Trigger::OutputLimit),
        ),
        (
            Recovery::default(),
            facts(idle),
            Skip::Disabled(Trigger::AfterKill),
        ),
    ];
    for (recovery, f, skip) in cases {
        assert_eq!(recovery.before_ledger(&f), Err(skip.clone()));
        assert_eq!(fresh(&recovery, &f), Decision::Nothing(skip));
    }
    // Told: a trigger seen but not acted on. Not told: nothing to continue, or turned off.
    assert!(r.worth_saying(&Skip::NoSessionId));
    assert!(r.worth_saying(&Skip::ResetUnknown));
    assert!(r.worth_saying(&Skip::ContinuedElsewhere));
    assert!(!r.worth_saying(&Skip::NotATrigger));
    assert!(!r.worth_saying(&Skip::Disabled(Trigger::AfterKill)));
    let storm = Skip::DuringBackoff {
        attempts: 3,
        status: Some(529),
        error: None,
    };
    assert!(
        r.worth_saying(&storm),
        "kills are continued: the storm is why not"
    );
    assert!(
        !Recovery::default().worth_saying(&storm),
        "kills are not continued anyway"
    );
}

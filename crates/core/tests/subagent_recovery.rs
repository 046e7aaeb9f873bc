//! The subagent contract, outcome by outcome: continue an output-limit cut-off of a continuable
//! agent once; a later failure gets one notice; everything else is never recovered; and how the
//! recorded transcripts of the real CLI (testdata/subagents) end.

use watchdog_core::recovery::*;
use watchdog_core::recovery::{Claim, Recovery, Trigger};

const SESSION: &str = "b042aa30-1f9b-40da-b416-11c34370df5c";
const AGENT: &str = "a02f401cf8728967a";
/// The message the parent is told to send (the contract's words).
const SUBAGENT_CONTINUE_MESSAGE: &str = "You stopped at the output token limit before \
finishing. Continue the unfinished task from where you stopped, in smaller pieces, without \
recap.";
/// The agent types Claude Code runs once.
const ONE_SHOT_AGENT_TYPES: &[&str] = &["Explore", "Plan"];

fn key() -> SubagentKey {
    SubagentKey::new(SESSION, AGENT).unwrap()
}

fn facts(end: SubagentEnd, agent_type: Option<&str>, failure_id: &str) -> SubagentFacts {
    SubagentFacts {
        key: key(),
        agent_type: agent_type.map(str::to_owned),
        end,
        failure_id: Some(failure_id.to_owned()),
        error: Some("API Error: … (error type max_output_tokens)".into()),
        seen_at_ms: 1_000,
    }
}

fn cut_off(failure_id: &str) -> SubagentFacts {
    facts(
        SubagentEnd::OutputLimit,
        Some("general-purpose"),
        failure_id,
    )
}

fn continued_state(failure_id: &str) -> LedgerState<SubagentMarker> {
    let f = cut_off(failure_id);
    let d = Recovery::default().decide_subagent(&f, &LedgerState::Fresh);
    LedgerState::Continued(SubagentMarker::for_continue(&f, &d).unwrap())
}

#[test]
fn first_output_limit_of_a_continuable_agent_is_continued_once() {
    let d = Recovery::default().decide_subagent(&cut_off("u1"), &LedgerState::Fresh);
    assert_eq!(
        d,
        SubagentDecision::Continue {
            message: SUBAGENT_CONTINUE_MESSAGE.into()
        }
    );
    let m = SubagentMarker::for_continue(&cut_off("u1"), &d).unwrap();
    assert_eq!(m.agent_id, AGENT);
    assert_eq!(m.session_id, SESSION);
    assert_eq!(m.failure_id.as_deref(), Some("u1"));
    assert_eq!(SubagentMarker::from_json(&m.to_json()).unwrap(), m);
}

#[test]
fn custom_agent_types_are_continuable() {
    let f = facts(SubagentEnd::OutputLimit, Some("code-reviewer"), "u1");
    assert!(matches!(
        Recovery::default().decide_subagent(&f, &LedgerState::Fresh),
        SubagentDecision::Continue { .. }
    ));
}

#[test]
fn one_shot_and_unverifiable_agents_are_never_continued() {
    for t in ONE_SHOT_AGENT_TYPES {
        let f = facts(SubagentEnd::OutputLimit, Some(t), "u1");
        assert_eq!(
            Recovery::default().decide_subagent(&f, &LedgerState::Fresh),
            SubagentDecision::Nothing(SubagentSkip::OneShot((*t).into()))
        );
    }
    for t in [None, Some("")] {
        let f = facts(SubagentEnd::OutputLimit, t, "u1");
        assert_eq!(
            Recovery::default().decide_subagent(&f, &LedgerState::Fresh),
            SubagentDecision::Nothing(SubagentSkip::TypeUnknown)
        );
    }
}

#[test]
fn everything_but_the_output_limit_is_never_recovered() {
    for end in [
        SubagentEnd::Completed,
        SubagentEnd::ApiError("rate_limit".into()),
        SubagentEnd::Refusal,
        SubagentEnd::Aborted,
        SubagentEnd::Running,
        SubagentEnd::Unknown,
    ] {
        let name = end.as_str();
        let f = facts(end, Some("general-purpose"), "u1");
        assert_eq!(
            Recovery::default().decide_subagent(&f, &LedgerState::Fresh),
            SubagentDecision::Nothing(SubagentSkip::NotATrigger(name)),
            "{name}"
        );
    }
}

#[test]
fn the_output_limit_trigger_switches_subagents_too() {
    let off = Recovery::default().with_trigger(Trigger::OutputLimit, false);
    assert_eq!(
        off.decide_subagent(&cut_off("u1"), &LedgerState::Fresh),
        SubagentDecision::Nothing(SubagentSkip::Disabled)
    );
    assert_eq!(
        Recovery::disabled().decide_subagent(&cut_off("u1"), &LedgerState::Fresh),
        SubagentDecision::Nothing(SubagentSkip::Disabled)
    );
}

#[test]
fn the_same_failure_seen_again_is_a_duplicate() {
    let d = Recovery::default().decide_subagent(&cut_off("u1"), &continued_state("u1"));
    assert_eq!(d, SubagentDecision::Nothing(SubagentSkip::Duplicate));
}

#[test]
fn a_failure_without_ids_cannot_be_told_apart_and_stays_silent() {
    let mut f = cut_off("u2");
    f.failure_id = None;
    let d = Recovery::default().decide_subagent(&f, &continued_state("u1"));
    assert_eq!(d, SubagentDecision::Nothing(SubagentSkip::Duplicate));
}

#[test]
fn a_second_failure_gets_one_notice_with_the_facts_and_options() {
    for end in [
        SubagentEnd::OutputLimit,
        SubagentEnd::ApiError("server_error".into()),
    ] {
        let f = facts(end.clone(), Some("general-purpose"), "u2");
        let SubagentDecision::Notice(n) =
            Recovery::default().decide_subagent(&f, &continued_state("u1"))
        else {
            panic!("no notice for {end:?}");
        };
        assert_eq!(n.again, end);
        let text = n.to_string();
        for needle in [
            AGENT,
            "general-purpose",
            "SendMessage",
            "TaskStop",
            "fresh subagent",
        ] {
            assert!(text.contains(needle), "{needle} missing: {text}");
        }
        // The notice never asks for another automatic continuation.
        assert!(!text.contains("\"to\""), "{text}");
    }
}

#[test]
fn a_continued_agent_that_completes_is_left_alone() {
    for end in [
        SubagentEnd::Completed,
        SubagentEnd::Running,
        SubagentEnd::Refusal,
        SubagentEnd::Aborted,
        SubagentEnd::Unknown,
    ] {
        let f = facts(end, Some("general-purpose"), "u2");
        assert_eq!(
            Recovery::default().decide_subagent(&f, &continued_state("u1")),
            SubagentDecision::Nothing(SubagentSkip::ContinuationEnded)
        );
    }
}

#[test]
fn after_the_notice_nothing_more() {
    let LedgerState::Continued(m) = continued_state("u1") else {
        unreachable!()
    };
    let noticed = LedgerState::Noticed(m);
    for f in [cut_off("u1"), cut_off("u3")] {
        assert_eq!(
            Recovery::default().decide_subagent(&f, &noticed),
            SubagentDecision::Nothing(SubagentSkip::AlreadyNoticed)
        );
    }
}

#[test]
fn keys_are_validated_and_name_one_file() {
    assert!(SubagentKey::new("not-a-uuid", AGENT).is_err());
    assert!(SubagentKey::new(SESSION, "../../etc").is_err());
    assert!(SubagentKey::new(SESSION, "a/b").is_err());
    assert!(SubagentKey::new(SESSION, &"a".repeat(65)).is_err());
    let upper = SubagentKey::new(&SESSION.to_ascii_uppercase(), AGENT).unwrap();
    assert_eq!(upper, key());
    assert_eq!(key().file_name(), format!("{SESSION}.{AGENT}.json"));
}

#[test]
fn memory_ledger_claims_once_and_notices_once() {
    let l = MemoryLedger::<SubagentKey, SubagentMarker>::default();
    let f = cut_off("u1");
    let m = SubagentMarker::for_continue(
        &f,
        &Recovery::default().decide_subagent(&f, &LedgerState::Fresh),
    )
    .unwrap();
    assert!(!l.record_notice(&key()).unwrap(), "no marker, no notice");
    assert_eq!(l.try_claim(&key(), &m).unwrap(), Claim::Won);
    assert_eq!(l.try_claim(&key(), &m).unwrap(), Claim::AlreadyClaimed);
    let other = SubagentKey::new(SESSION, "a0000000000000001").unwrap();
    assert_eq!(l.try_claim(&other, &m).unwrap(), Claim::Won, "per agent");
    assert!(l.record_notice(&key()).unwrap());
    assert!(!l.record_notice(&key()).unwrap());
    assert!(matches!(
        LedgerState::from(l.get(&key()).unwrap()),
        LedgerState::Noticed(_)
    ));
}

#[test]
fn the_instruction_names_exactly_the_agent_and_sendmessage() {
    let text = continue_instruction(&key(), Some("general-purpose"), SUBAGENT_CONTINUE_MESSAGE);
    assert!(text.contains(&format!("\"to\":\"{AGENT}\"")), "{text}");
    assert!(text.contains("select:SendMessage"));
    assert_eq!(text.matches("\"to\"").count(), 1);
}

fn transcript(name: &str) -> String {
    let path = format!(
        "{}/../../testdata/subagents/{name}.subagent-transcript.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn recorded_transcripts_end_as_the_cli_left_them() {
    // Cut off four times: the synthetic max_output_tokens entry ends it.
    for name in ["a2_sub_mt_all_fg", "a8_sub_mt_all_bg"] {
        let t = transcript(name);
        let end = SubagentEnd::from_transcript(t.lines());
        assert_eq!(end.end, SubagentEnd::OutputLimit, "{name}");
        assert_eq!(end.agent_type.as_deref(), Some("general-purpose"));
        assert!(end.failure_id.is_some());
        assert!(end.error.unwrap().contains("output token maximum"));
    }
    // Healthy, and continued with SendMessage after the cut-off: completed.
    for name in ["a1_healthy_fg", "c2_recipe_fg", "b1_sub_mt4_sendmessage"] {
        let t = transcript(name);
        assert_eq!(
            SubagentEnd::from_transcript(t.lines()).end,
            SubagentEnd::Completed,
            "{name}"
        );
    }
    // The continued transcript, cut just after the coordinator's message: running again.
    let t = transcript("c2_recipe_fg");
    let lines: Vec<&str> = t.lines().collect();
    let upto = lines
        .iter()
        .position(|l| l.contains("\"origin\":{\"kind\":\"coordinator\"}"))
        .expect("coordinator message");
    assert_eq!(
        SubagentEnd::from_transcript(lines[..=upto].iter().copied()).end,
        SubagentEnd::Running
    );
    // Up to the synthetic entry only: the first failure, with its own id.
    let synth = lines
        .iter()
        .position(|l| l.contains("\"isApiErrorMessage\":true"))
        .unwrap();
    let first = SubagentEnd::from_transcript(lines[..=synth].iter().copied());
    assert_eq!(first.end, SubagentEnd::OutputLimit);
    assert_eq!(first.failure_id.as_deref(), Some("failure-1"));
    assert_eq!(first.failures, 1);
}

#[test]
fn a_reported_failure_the_transcript_does_not_show_yet_is_the_next_one() {
    // PostToolUseFailure runs before the CLI has written the agent's last entries: measured,
    // the transcript may still end in the prompt, a cut-off reply or its retry note.
    let t = transcript("a2_sub_mt_all_fg");
    let lines: Vec<&str> = t.lines().collect();
    let reported = "Agent terminated early due to an API error: … (error type max_output_tokens)";
    let synth = lines
        .iter()
        .position(|l| l.contains("\"isApiErrorMessage\":true"))
        .unwrap();
    for upto in [1, synth - 1, synth] {
        let end = SubagentEnd::from_transcript(lines[..upto].iter().copied());
        assert_ne!(end.end, SubagentEnd::OutputLimit, "upto {upto}");
        let end = end.with_reported_error(reported);
        assert_eq!(end.end, SubagentEnd::OutputLimit, "upto {upto}");
        // The same id the complete transcript gives the failure: one marker, not two.
        assert_eq!(end.failure_id.as_deref(), Some("failure-1"), "upto {upto}");
    }
    let full = SubagentEnd::from_transcript(lines.iter().copied());
    assert_eq!(full.failure_id.as_deref(), Some("failure-1"));
    // Once written, the transcript wins: a reported error changes nothing.
    assert_eq!(full.clone().with_reported_error(reported), full);
    // Another reported error, or a finished transcript, is never upgraded.
    let partial = SubagentEnd::from_transcript(lines[..synth].iter().copied());
    assert_eq!(
        partial.clone().with_reported_error("API Error: 500").end,
        partial.end
    );
    let done = transcript("a1_healthy_fg");
    let healthy = SubagentEnd::from_transcript(done.lines());
    assert_eq!(
        healthy.clone().with_reported_error(reported).end,
        SubagentEnd::Completed
    );
    // The continued agent failing again is its second failure.
    let again = format!(
        "{t}{}\n",
        lines[synth].replace("\"uuid\":\"", "\"uuid\":\"x")
    );
    let second = SubagentEnd::from_transcript(again.lines());
    assert_eq!(second.failure_id.as_deref(), Some("failure-2"));
    // Given only the tail, the host supplies the whole file's count.
    let tail = SubagentEnd::from_transcript(again.lines().rev().take(1));
    assert_eq!(tail.failure_id.as_deref(), Some("failure-1"));
    assert_eq!(
        tail.with_failure_count(2).failure_id.as_deref(),
        Some("failure-2")
    );
    // A count never makes a non-failure one.
    let healthy = SubagentEnd::from_transcript(done.lines()).with_failure_count(3);
    assert_eq!(healthy.failure_id, None);
}

#[test]
fn odd_transcripts_are_never_a_trigger() {
    let cases: &[&[&str]] = &[
        &[],
        &["", "not json", "{\"type\":\"attachment\"}"],
        &[r#"{"type":"assistant","uuid":"x","message":{"stop_reason":"refusal","content":[]}}"#],
        &[r#"{"type":"user","uuid":"x","message":{"content":"[Request interrupted by user]"}}"#],
        &[
            r#"{"type":"assistant","uuid":"x","message":{"stop_reason":"max_tokens","content":[{"type":"text","text":"cut"}]}}"#,
        ],
        &[
            r#"{"type":"assistant","uuid":"x","isApiErrorMessage":true,"apiError":"rate_limit","message":{"content":[{"type":"text","text":"API Error: 429"}]}}"#,
        ],
        &[
            r#"{"type":"assistant","uuid":"x","message":{"stop_reason":"weird_new_reason","content":[]}}"#,
        ],
    ];
    for lines in cases {
        let end = SubagentEnd::from_transcript(lines.iter().copied()).end;
        assert_ne!(end, SubagentEnd::OutputLimit, "{lines:?}");
    }
}

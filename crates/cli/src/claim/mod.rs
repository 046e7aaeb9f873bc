//! `agent-watchdog claim SESSION_ID`: claim a session's continuation marker for a host that
//! continues the session itself (the Temporal helpers: a retried activity resumes the session
//! only after this says it may, so no attempt on any machine continues it twice).
//!
//! The marker is the one `run` writes (the same ledger, the same name): a session claimed here
//! is never continued by `run` either, and the other way round. One JSON line on stdout:
//! `{"claimed": true, "session_id": …, "marker": <where>}` (exit 0), `{"claimed": false,
//! "session_id": …, "reason": …}` when another run already continued it (exit 0: the answer is
//! known), or `{"claimed": false, "session_id": …, "error": …}` when the ledger cannot say
//! (exit 1: fail closed, nothing may continue).

use serde_json::json;
use watchdog_core::recovery::{
    validate_session_id, Claim, Ledger, Marker, OutcomeFacts, Skip, Trigger, MARKER_VERSION,
};
use watchdog_core::OutcomeKind;

mod args;

use crate::ledger_choice::LedgerChoice;
pub use args::ClaimArgs;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis().min(u128::from(u64::MAX)) as u64)
        .unwrap_or(0)
}

/// Run `claim`: print the answer, return the exit code.
pub fn main(args: ClaimArgs) -> i32 {
    let (line, code) = answer(&args, now_ms());
    println!("{line}");
    code
}

/// The JSON line and the exit code of `claim` at `now_ms`.
fn answer(args: &ClaimArgs, now_ms: u64) -> (serde_json::Value, i32) {
    let sid = args.session_id.trim().to_ascii_lowercase();
    let error = |e: String| {
        (
            json!({"claimed": false, "session_id": sid, "error": e}),
            crate::exit_code::INTERNAL,
        )
    };
    if let Err(e) = validate_session_id(&sid) {
        return error(e.to_string());
    }
    if args.prompt.trim().is_empty() {
        return error("the continuation prompt is empty".into());
    }
    let choice = LedgerChoice {
        url: args.ledger.clone(),
        state_dir: args.state_dir.clone(),
    };
    let ledger = match choice.open() {
        Ok(l) => l,
        Err(e) => return error(e),
    };
    let original = OutcomeFacts {
        outcome: if args.after_kill.is_some() {
            OutcomeKind::Killed
        } else {
            OutcomeKind::Incomplete
        }
        .as_str()
        .into(),
        kill_kind: args.after_kill.clone(),
        subtype: None,
        terminal_reason: None,
        stop_reason: None,
        api_error: None,
        api_error_status: None,
        rate_limit_resets_at_ms: None,
        cost_usd: None,
        num_turns: None,
        ended_at_ms: now_ms,
    };
    let marker = Marker {
        version: MARKER_VERSION,
        session_id: sid.clone(),
        trigger: Trigger::AfterKill,
        created_at_ms: now_ms,
        original,
        prompt: args.prompt.clone(),
        wait_until_ms: None,
    };
    match ledger.try_claim(sid.as_str(), &marker) {
        Ok(Claim::Won) => (
            json!({"claimed": true, "session_id": sid, "marker": ledger.marker_place(&sid)}),
            0,
        ),
        Ok(Claim::AlreadyClaimed) => (
            json!({
                "claimed": false,
                "session_id": sid,
                "reason": Skip::ContinuedElsewhere.to_string(),
            }),
            0,
        ),
        Err(e) => error(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(sid: &str, dir: &std::path::Path) -> ClaimArgs {
        ClaimArgs {
            session_id: sid.into(),
            prompt: watchdog_core::recovery::Recovery::default()
                .prompt(Trigger::AfterKill)
                .into(),
            after_kill: Some("idle".into()),
            state_dir: Some(dir.to_owned()),
            ledger: None,
        }
    }

    #[test]
    fn the_first_claim_wins_every_later_one_is_refused_and_bad_input_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let sid = "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc";
        let (first, code) = answer(&args(sid, dir.path()), 1);
        assert_eq!(
            (first["claimed"].as_bool(), code),
            (Some(true), 0),
            "{first}"
        );
        assert!(first["marker"].as_str().unwrap().ends_with(".json"));
        // Upper case is the same session.
        let (again, code) = answer(&args(&sid.to_uppercase(), dir.path()), 2);
        assert_eq!((again["claimed"].as_bool(), code), (Some(false), 0));
        assert!(again["reason"].as_str().unwrap().contains("another run"));
        // The marker is `run`'s: the file ledger reads it as a continuation after a kill.
        let ledger = agent_sdk_watchdog::FileLedger::open(dir.path()).unwrap();
        let m = Ledger::get(&ledger, sid).unwrap().unwrap().marker;
        assert_eq!(m.trigger, Trigger::AfterKill);
        assert_eq!(m.original.kill_kind.as_deref(), Some("idle"));
        for bad in ["", "../x", "not-a-uuid"] {
            let (v, code) = answer(&args(bad, dir.path()), 3);
            assert_eq!((v["claimed"].as_bool(), code), (Some(false), 1), "{v}");
        }
        let mut empty = args(sid, dir.path());
        empty.prompt = " ".into();
        assert_eq!(answer(&empty, 4).1, 1);
    }
}

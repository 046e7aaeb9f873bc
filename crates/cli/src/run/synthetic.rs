//! The synthetic final `result` line written on a kill by `claude-watchdog` and
//! `run --emit-result`: a message every Agent SDK already reads as an error result (in a Codex
//! or opencode run, that CLI's own failure event: [`end_line`]). Claude Code's shape and its
//! reader are the core's ([`watchdog_core::synthetic`]); the ids are made here.

use std::io::Read;

use serde_json::{json, Value};
use watchdog_core::synthetic::SyntheticResult;
use watchdog_core::{facts::ClaudeSessionId, Dialect, Kill};

/// A random (version 4) UUID, from the OS's random source; time-based if that is unavailable.
pub fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok();
    if !ok {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
            ^ (u128::from(std::process::id()) << 64);
        b = n.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The synthetic `result` for `kill` (the core's shape, [`SyntheticResult`]): `subtype:
/// error_during_execution`, `is_error: true`, `terminal_reason: watchdog_<kind>`, `result`: one
/// sentence saying what was killed and why.
pub fn result_line(
    kill: &Kill,
    sentence: &str,
    session_id: Option<&ClaudeSessionId>,
    duration_ms: u64,
    num_turns: u64,
) -> Value {
    let session_id = session_id.map_or_else(uuid_v4, |id| id.as_str().to_owned());
    SyntheticResult {
        kind: kill.kind.as_str(),
        sentence,
        session_id: &session_id,
        uuid: &uuid_v4(),
        duration_ms,
        num_turns,
    }
    .to_json()
}

/// The error answer to the host's control request `request_id`, written before the synthetic
/// `result` of a kill that found it unanswered: an SDK's `request()` rejects with `error`
/// (the kill's sentence) instead of waiting for an answer that will not come.
pub fn control_error_line(request_id: &str, error: &str) -> Value {
    json!({
        "type": "control_response",
        "response": {
            "subtype": "error",
            "request_id": request_id,
            "error": error,
        },
    })
}

/// The synthetic line that ends a killed run in its own dialect: Claude Code's `result`
/// ([`result_line`]); for Codex a `turn.failed` whose `error.message` is the sentence; for
/// opencode an `error` named `AgentWatchdogKill` with the sentence and the kill's kind. Each is
/// what its CLI's own readers take for a failed turn.
pub fn end_line(
    dialect: Dialect,
    kill: &Kill,
    sentence: &str,
    session_id: Option<&ClaudeSessionId>,
    duration_ms: u64,
    num_turns: u64,
) -> Value {
    let reason = format!("watchdog_{}", kill.kind.as_str());
    match dialect {
        Dialect::Codex => json!({
            "type": "turn.failed",
            "error": {"message": sentence, "terminal_reason": reason},
        }),
        Dialect::Opencode => {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            json!({
                "type": "error",
                "timestamp": now_ms,
                "sessionID": session_id.map(ClaudeSessionId::as_str),
                "error": {"name": "AgentWatchdogKill", "data": {"message": sentence, "terminal_reason": reason}},
            })
        }
        _ => result_line(kill, sentence, session_id, duration_ms, num_turns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_look_like_uuids() {
        let u = uuid_v4();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(u, uuid_v4());
    }

    /// Each dialect's synthetic end is, to its own reader, the end of a failed turn (and to the
    /// watchdog's classifier in that dialect: a settle with an error outcome and the session).
    #[test]
    fn the_synthetic_end_is_a_failed_turn_in_each_dialect() {
        use watchdog_core::facts::ResultFacts;
        use watchdog_core::{KillKind, Limits, LineView, Registry, SessionConfig, Signal};
        let at = std::time::Instant::now();
        let id = Registry::new(Limits::default()).register(at, SessionConfig::default());
        let kill = Kill::new(id, KillKind::NoProgress, at);
        let sid = ClaudeSessionId::parse("ses_1").unwrap();
        for d in Dialect::ALL {
            let line = end_line(d, &kill, "killed it", Some(&sid), 5, 1).to_string();
            let view = LineView::parse_str(&line).unwrap();
            assert_eq!(Dialect::of_line(&view), Some(d), "{line}");
            let class = d.classify(&view);
            assert_eq!(class.signal, Signal::Settle, "{line}");
            assert!(
                ResultFacts::of_end(&view, class.kind).is_error_result(),
                "{line}"
            );
            assert!(line.contains("killed it") && line.contains("watchdog_no_progress"));
            if d != Dialect::Codex {
                let read = ClaudeSessionId::of_dialect_line(&view, class.kind);
                assert_eq!(read.as_ref(), Some(&sid), "{line}");
            }
        }
    }
}

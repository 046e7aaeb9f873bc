//! The synthetic final `result` the watchdog writes when it kills a session (`claude-watchdog`
//! always, `run --emit-result`): a message every Agent SDK already reads as an error result,
//! and that a host reads back as the watchdog's kill ([`SyntheticKill::read`]). Both halves
//! are here, so the writer and every reader (the SDK helpers, the SDK-run fold) agree.
//!
//! The shape: `type: result`, `subtype: error_during_execution`, `is_error: true`,
//! `terminal_reason: watchdog_<kind>`, `result`: one sentence saying what was killed and why.

use serde_json::{json, Value};

use crate::view::LineView;

/// The prefix of the synthetic result's `terminal_reason`: `watchdog_<kind>`.
pub const TERMINAL_PREFIX: &str = "watchdog_";

/// The `subtype` of the synthetic result.
pub const SUBTYPE: &str = "error_during_execution";

/// What the writer puts in one synthetic result: the kill's kind (`idle`, …), the sentence,
/// the session's id and the line's own `uuid` (the host makes both: the core reads no random
/// source), the run's duration and turns.
#[derive(Debug, Clone, Copy)]
pub struct SyntheticResult<'a> {
    /// The kill's kind, as [`KillKind::as_str`](crate::KillKind::as_str) names it.
    pub kind: &'a str,
    /// One sentence: what was killed and why.
    pub sentence: &'a str,
    /// Claude Code's session id (or one the host made up when none was seen).
    pub session_id: &'a str,
    /// The line's own `uuid`.
    pub uuid: &'a str,
    /// The run's duration, ms.
    pub duration_ms: u64,
    /// The turns the run took.
    pub num_turns: u64,
}

impl SyntheticResult<'_> {
    /// The line, as JSON: every field an Agent SDK reads of a `result`.
    pub fn to_json(&self) -> Value {
        json!({
            "type": "result",
            "subtype": SUBTYPE,
            "is_error": true,
            "terminal_reason": format!("{TERMINAL_PREFIX}{}", self.kind),
            "result": self.sentence,
            "errors": [self.sentence],
            "session_id": self.session_id,
            "uuid": self.uuid,
            "duration_ms": self.duration_ms,
            "duration_api_ms": 0,
            "num_turns": self.num_turns,
            "stop_reason": null,
            "total_cost_usd": 0,
            "usage": {
                "input_tokens": 0,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 0,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
            },
            "modelUsage": {},
            "permission_denials": [],
        })
    }
}

/// The watchdog's kill, as read back from its synthetic result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntheticKill {
    /// The kill's kind (`idle`, `no_progress`, …; a newer drop-in may name one this build
    /// does not know).
    pub kind: String,
    /// The sentence: what was killed and why.
    pub reason: String,
}

impl SyntheticKill {
    /// The kill, if `line` is the watchdog's synthetic result: a `result` (or a line without a
    /// `type`: an SDK's result object) with `subtype: error_during_execution`, `is_error:
    /// true`, `terminal_reason: watchdog_<kind>` (a kind is not empty) and a string `result`.
    /// `None` for anything else, a result of Claude Code's own included.
    ///
    /// ```
    /// use watchdog_core::synthetic::{SyntheticKill, SyntheticResult};
    /// use watchdog_core::LineView;
    /// let line = SyntheticResult { kind: "idle", sentence: "killed", session_id: "s", uuid: "u",
    ///     duration_ms: 1, num_turns: 1 }.to_json().to_string();
    /// let kill = SyntheticKill::read(&LineView::parse_str(&line).unwrap()).unwrap();
    /// assert_eq!((kill.kind.as_str(), kill.reason.as_str()), ("idle", "killed"));
    /// let own = r#"{"type":"result","subtype":"success","is_error":false,"result":"hi"}"#;
    /// assert_eq!(SyntheticKill::read(&LineView::parse_str(own).unwrap()), None);
    /// ```
    pub fn read(line: &LineView<'_>) -> Option<SyntheticKill> {
        if line.kind().is_some_and(|k| k != "result") {
            return None;
        }
        if line.subtype().as_deref() != Some(SUBTYPE) || line.is_error() != Some(true) {
            return None;
        }
        let reason = line.terminal_reason()?;
        let kind = reason
            .strip_prefix(TERMINAL_PREFIX)
            .filter(|k| !k.is_empty())?;
        let text = line.member("result")?.as_str()?;
        Some(SyntheticKill {
            kind: kind.to_owned(),
            reason: text.into_owned(),
        })
    }

    /// The kill's kind as this build names it, if it does.
    pub fn kill_kind(&self) -> Option<crate::KillKind> {
        crate::KillKind::ALL
            .into_iter()
            .find(|k| k.as_str() == self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> Option<SyntheticKill> {
        SyntheticKill::read(&LineView::parse_str(line).ok()?)
    }

    #[test]
    fn the_writer_is_read_back_and_nothing_else_is() {
        for kind in crate::KillKind::ALL {
            let line = SyntheticResult {
                kind: kind.as_str(),
                sentence: "agent-watchdog killed claude",
                session_id: "s",
                uuid: "u",
                duration_ms: 5,
                num_turns: 2,
            }
            .to_json()
            .to_string();
            let k = read(&line).unwrap();
            assert_eq!(k.kill_kind(), Some(kind));
            assert_eq!(k.reason, "agent-watchdog killed claude");
        }
        let ok = |fields: &str| format!(r#"{{"type":"result",{fields}}}"#);
        let base = r#""subtype":"error_during_execution","is_error":true"#;
        assert!(read(&ok(&format!(
            r#"{base},"terminal_reason":"watchdog_x","result":"r""#
        )))
        .is_some());
        for bad in [
            ok(&format!(r#"{base},"terminal_reason":"watchdog_","result":"r""#)),
            ok(&format!(r#"{base},"terminal_reason":"completed","result":"r""#)),
            ok(&format!(r#"{base},"terminal_reason":"watchdog_idle","result":1"#)),
            ok(r#""subtype":"error_during_execution","is_error":"yes","terminal_reason":"watchdog_idle","result":"r""#),
            ok(r#""subtype":"success","is_error":true,"terminal_reason":"watchdog_idle","result":"r""#),
            r#"{"type":"assistant","subtype":"error_during_execution","is_error":true,"terminal_reason":"watchdog_idle","result":"r"}"#.to_owned(),
        ] {
            assert_eq!(read(&bad), None, "{bad}");
        }
        // An SDK's result object written without its `type`.
        let untyped = r#"{"subtype":"error_during_execution","is_error":true,"terminal_reason":"watchdog_linger","result":"r"}"#;
        assert_eq!(read(untyped).unwrap().kind, "linger");
        assert_eq!(
            read(untyped).unwrap().kill_kind(),
            Some(crate::KillKind::Linger)
        );
        let newer = ok(&format!(
            r#"{base},"terminal_reason":"watchdog_somethingnew","result":"r""#
        ));
        assert_eq!(read(&newer).unwrap().kill_kind(), None);
    }
}

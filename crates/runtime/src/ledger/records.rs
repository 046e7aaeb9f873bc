//! A ledger's records, the same in every backend (files, Redis, PostgreSQL): their names
//! relative to the ledger's root, the notice records, and how a stored marker is read.

use watchdog_core::recovery::{validate_session_id, LedgerError, Marker};
use watchdog_core::recovery::{SubagentKey, SubagentMarker};

use super::durable_files::now_ms;

/// The directory (or name prefix) of continuation markers.
pub(crate) const CONTINUED: &str = "continued";
/// The directory (or name prefix) of notice records.
pub(crate) const NOTICED: &str = "noticed";
/// The directory (or name prefix) of subagent records.
pub(crate) const SUBAGENTS: &str = "subagents";

/// The name of a session's record (`sub`: [`CONTINUED`] or [`NOTICED`]) relative to the
/// ledger's root: `continued/<session id, lower case>.json`.
pub(crate) fn session_record_name(sub: &str, session_id: &str) -> Result<String, LedgerError> {
    validate_session_id(session_id)?;
    Ok(format!("{sub}/{}.json", session_id.to_ascii_lowercase()))
}

/// The name of a subagent's record relative to the ledger's root:
/// `subagents/continued/<session id>.<agent id>.json`.
pub(crate) fn subagent_record_name(sub: &str, key: &SubagentKey) -> String {
    format!("{SUBAGENTS}/{sub}/{}", key.file_name())
}

/// The marker `text` stored at `place` for `session_id`: a corrupt one, or one of another
/// session, is an error naming `place` (and so counts as claimed). Every backend reads its
/// markers through this.
pub(crate) fn read_marker(
    text: &str,
    session_id: &str,
    place: &dyn std::fmt::Display,
) -> Result<Marker, LedgerError> {
    let marker = Marker::from_json(text).map_err(|e| {
        let why = match e {
            LedgerError::Corrupt(why) => why,
            other => other.to_string(),
        };
        LedgerError::Corrupt(format!("{place}: {why}"))
    })?;
    if !marker.session_id.eq_ignore_ascii_case(session_id) {
        return Err(LedgerError::Corrupt(format!(
            "{place}: holds session id {:?}",
            marker.session_id
        )));
    }
    Ok(marker)
}

/// The notice record of `session_id` (what every backend stores when the notice is given).
pub(crate) fn notice_record(session_id: &str) -> String {
    let record = serde_json::json!({
        "session_id": session_id,
        "noticed_at_ms": now_ms(),
    });
    format!("{record}\n")
}

/// The subagent marker `text` stored at `place` for `key`: a corrupt one, or one of another
/// agent, is an error naming `place` (and so counts as claimed). Every backend reads its
/// subagent markers through this.
pub(crate) fn read_subagent_marker(
    text: &str,
    key: &SubagentKey,
    place: &dyn std::fmt::Display,
) -> Result<SubagentMarker, LedgerError> {
    let marker = SubagentMarker::from_json(text)
        .map_err(|e| LedgerError::Corrupt(format!("{place}: {e}")))?;
    if !marker.session_id.eq_ignore_ascii_case(key.session_id())
        || marker.agent_id != key.agent_id()
    {
        return Err(LedgerError::Corrupt(format!(
            "{place}: holds {}/{}",
            marker.session_id, marker.agent_id
        )));
    }
    Ok(marker)
}

/// The notice record of the subagent `key`.
pub(crate) fn subagent_notice_record(key: &SubagentKey) -> String {
    let record = serde_json::json!({
        "session_id": key.session_id(),
        "agent_id": key.agent_id(),
        "noticed_at_ms": now_ms(),
    });
    format!("{record}\n")
}

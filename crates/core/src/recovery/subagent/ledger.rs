//! The subagent's durable marker, kept by a [`Ledger`](crate::recovery::Ledger) keyed by
//! session id + agent id.

use serde::{Deserialize, Serialize};

use super::LedgerError;
use crate::wall::WallMs;

/// The durable record that a subagent was continued, written before the parent is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentMarker {
    /// Format version (1).
    pub version: u32,
    /// The session.
    pub session_id: String,
    /// The agent.
    pub agent_id: String,
    /// Its type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The `uuid` of the failure entry this continuation answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_id: Option<String>,
    /// The first failure's error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the marker was made, epoch ms.
    pub created_at_ms: WallMs,
    /// The message the parent was told to send.
    pub message: String,
}

impl SubagentMarker {
    /// As one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Read a marker; a corrupt one is an error, never a default.
    pub fn from_json(text: &str) -> Result<Self, LedgerError> {
        serde_json::from_str(text).map_err(|e| LedgerError::Corrupt(e.to_string()))
    }
}

//! The subagent's durable marker and the ledger keyed by session id + agent id.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{Claim, LedgerError};
use crate::wall::WallMs;

use super::SubagentKey;

/// The durable record that a subagent was continued, written before the parent is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentMarker {
    /// Format version ([`SUBAGENT_MARKER_VERSION`](super::SUBAGENT_MARKER_VERSION)).
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

/// What the ledger holds for one subagent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentEntry {
    /// The continuation marker.
    pub marker: SubagentMarker,
    /// Whether the notice was given.
    pub notice_recorded: bool,
}

/// What the ledger knows about one subagent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubagentState {
    /// Never continued.
    Fresh,
    /// Continued once.
    Continued(SubagentMarker),
    /// Continued once, failed again, and the notice was given.
    Noticed(SubagentMarker),
}

impl From<Option<SubagentEntry>> for SubagentState {
    fn from(entry: Option<SubagentEntry>) -> Self {
        match entry {
            None => SubagentState::Fresh,
            Some(e) if e.notice_recorded => SubagentState::Noticed(e.marker),
            Some(e) => SubagentState::Continued(e.marker),
        }
    }
}

/// Durable, race-free subagent markers, keyed by [`SubagentKey`]. The same rules as
/// [`Ledger`](crate::recovery::Ledger): `try_claim` is atomic and exclusive; every error means *do not
/// continue*.
pub trait SubagentLedger {
    /// Write `marker` for `key` unless one exists.
    fn try_claim(&self, key: &SubagentKey, marker: &SubagentMarker) -> Result<Claim, LedgerError>;
    /// The entry of `key`, if any.
    fn get(&self, key: &SubagentKey) -> Result<Option<SubagentEntry>, LedgerError>;
    /// Record that the notice was given: `Ok(true)` the first time only; `Ok(false)` if it was
    /// already recorded or there is no marker.
    fn record_notice(&self, key: &SubagentKey) -> Result<bool, LedgerError>;
}

/// Subagent markers in memory: for tests and process-lifetime guards.
#[derive(Debug, Default)]
pub struct MemorySubagentLedger {
    entries: Mutex<HashMap<SubagentKey, SubagentEntry>>,
}

impl MemorySubagentLedger {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SubagentKey, SubagentEntry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SubagentLedger for MemorySubagentLedger {
    fn try_claim(&self, key: &SubagentKey, marker: &SubagentMarker) -> Result<Claim, LedgerError> {
        let mut m = self.lock();
        if m.contains_key(key) {
            return Ok(Claim::AlreadyClaimed);
        }
        m.insert(
            key.clone(),
            SubagentEntry {
                marker: marker.clone(),
                notice_recorded: false,
            },
        );
        Ok(Claim::Won)
    }

    fn get(&self, key: &SubagentKey) -> Result<Option<SubagentEntry>, LedgerError> {
        Ok(self.lock().get(key).cloned())
    }

    fn record_notice(&self, key: &SubagentKey) -> Result<bool, LedgerError> {
        Ok(match self.lock().get_mut(key) {
            Some(e) if !e.notice_recorded => {
                e.notice_recorded = true;
                true
            }
            _ => false,
        })
    }
}

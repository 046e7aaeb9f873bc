//! The durable marker ([`Marker`]) and the ledger that claims it at most once ([`Ledger`]).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::wall::WallMs;

use super::{OutcomeFacts, SubagentKey, SubagentMarker, Trigger};

/// Format version of [`Marker`].
pub const MARKER_VERSION: u32 = 1;

/// The durable record that a session was continued: written before the continuation starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Marker {
    /// Format version ([`MARKER_VERSION`]).
    pub version: u32,
    /// The session that was continued.
    pub session_id: String,
    /// Why.
    pub trigger: Trigger,
    /// When the marker was made, epoch ms.
    pub created_at_ms: WallMs,
    /// The run that triggered the continuation.
    pub original: OutcomeFacts,
    /// The continuation prompt sent.
    pub prompt: String,
    /// When the continuation may start (a rate-limit wait), epoch ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_until_ms: Option<WallMs>,
}

impl Marker {
    /// As one line of JSON.
    pub fn to_json(&self) -> String {
        // A struct of strings and numbers always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Read a marker; a corrupt one is an error, never a default.
    pub fn from_json(text: &str) -> Result<Marker, LedgerError> {
        serde_json::from_str(text).map_err(|e| LedgerError::Corrupt(e.to_string()))
    }
}

/// A ledger failure. Every error means: do **not** continue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The session id is not a UUID; it is never used in a path.
    #[error("invalid session id {0:?}: expected a UUID")]
    InvalidSessionId(String),
    /// The store cannot be read or written.
    #[error("recovery ledger unavailable: {0}")]
    Unavailable(String),
    /// A stored marker cannot be read.
    #[error("recovery marker is corrupt: {0}")]
    Corrupt(String),
}

/// The result of [`Ledger::try_claim`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// This caller wrote the marker: it, and only it, may continue.
    Won,
    /// A marker already existed: never continue.
    AlreadyClaimed,
}

/// What a ledger holds for one key: a session ([`Marker`]) or a subagent
/// ([`SubagentMarker`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry<M = Marker> {
    /// The continuation marker.
    pub marker: M,
    /// Whether the notice was given.
    pub notice_recorded: bool,
}

/// Durable, race-free continuation markers: `Ledger` (a session's [`Marker`], keyed by session
/// id) and `Ledger<SubagentKey, SubagentMarker>` (a subagent's, keyed by session id + agent id,
/// [`SubagentKey`]).
///
/// Implementations must make `try_claim` atomic and exclusive (exactly one caller among any
/// number of threads and processes gets [`Claim::Won`]) and must validate a session id with
/// [`validate_session_id`] before using it. Every error means *do not continue*.
pub trait Ledger<K: ?Sized = str, M = Marker> {
    /// Write `marker` for `key` unless one exists.
    fn try_claim(&self, key: &K, marker: &M) -> Result<Claim, LedgerError>;
    /// The entry of `key`, if any.
    fn get(&self, key: &K) -> Result<Option<LedgerEntry<M>>, LedgerError>;
    /// Record that the notice was given. `Ok(true)` the first time only; `Ok(false)` if it was
    /// already recorded or there is no marker.
    fn record_notice(&self, key: &K) -> Result<bool, LedgerError>;
}

/// A ledger in memory: for tests and for hosts that only need a process-lifetime guard. Keyed
/// by session id (`MemoryLedger`) or by [`SubagentKey`]
/// (`MemoryLedger<SubagentKey, SubagentMarker>`).
#[derive(Debug)]
pub struct MemoryLedger<K = String, M = Marker> {
    entries: Mutex<HashMap<K, LedgerEntry<M>>>,
}

impl<K, M> Default for MemoryLedger<K, M> {
    fn default() -> Self {
        MemoryLedger {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq, M: Clone> MemoryLedger<K, M> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, LedgerEntry<M>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn claim<Q>(&self, key: &Q, marker: &M) -> Claim
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let mut m = self.lock();
        if m.contains_key(key) {
            return Claim::AlreadyClaimed;
        }
        m.insert(
            key.to_owned(),
            LedgerEntry {
                marker: marker.clone(),
                notice_recorded: false,
            },
        );
        Claim::Won
    }

    fn entry<Q>(&self, key: &Q) -> Option<LedgerEntry<M>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.lock().get(key).cloned()
    }

    fn notice<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        match self.lock().get_mut(key) {
            Some(e) if !e.notice_recorded => {
                e.notice_recorded = true;
                true
            }
            _ => false,
        }
    }
}

impl Ledger for MemoryLedger {
    fn try_claim(&self, session_id: &str, marker: &Marker) -> Result<Claim, LedgerError> {
        validate_session_id(session_id)?;
        Ok(self.claim(session_id, marker))
    }

    fn get(&self, session_id: &str) -> Result<Option<LedgerEntry>, LedgerError> {
        validate_session_id(session_id)?;
        Ok(self.entry(session_id))
    }

    fn record_notice(&self, session_id: &str) -> Result<bool, LedgerError> {
        validate_session_id(session_id)?;
        Ok(self.notice(session_id))
    }
}

impl Ledger<SubagentKey, SubagentMarker> for MemoryLedger<SubagentKey, SubagentMarker> {
    fn try_claim(&self, key: &SubagentKey, marker: &SubagentMarker) -> Result<Claim, LedgerError> {
        Ok(self.claim(key, marker))
    }

    fn get(&self, key: &SubagentKey) -> Result<Option<LedgerEntry<SubagentMarker>>, LedgerError> {
        Ok(self.entry(key))
    }

    fn record_notice(&self, key: &SubagentKey) -> Result<bool, LedgerError> {
        Ok(self.notice(key))
    }
}

/// Check that `id` is a UUID in the canonical `8-4-4-4-12` hex form (as Claude Code writes
/// session ids), so it is safe in a file name.
///
/// ```
/// use watchdog_core::recovery::validate_session_id;
/// assert!(validate_session_id("90455ab9-05b5-4ba0-9d10-01a53fd0bcdc").is_ok());
/// assert!(validate_session_id("../../etc/passwd").is_err());
/// ```
pub fn validate_session_id(id: &str) -> Result<(), LedgerError> {
    let ok = id.len() == 36
        && id.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        });
    if ok {
        Ok(())
    } else {
        Err(LedgerError::InvalidSessionId(id.chars().take(64).collect()))
    }
}

/// What the ledger knows about a session (`LedgerState`) or a subagent
/// (`LedgerState<SubagentMarker>`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LedgerState<M = Marker> {
    /// No marker: the run was the user's own (a subagent: never continued).
    Fresh,
    /// A continuation was claimed: the run was the continuation.
    Continued(M),
    /// The continuation failed and the notice was given.
    Noticed(M),
}

impl<M> From<Option<LedgerEntry<M>>> for LedgerState<M> {
    fn from(entry: Option<LedgerEntry<M>>) -> Self {
        match entry {
            None => LedgerState::Fresh,
            Some(e) if e.notice_recorded => LedgerState::Noticed(e.marker),
            Some(e) => LedgerState::Continued(e.marker),
        }
    }
}

//! Which ledger `run` and `hook` use: the shared one of `--ledger` (Redis, PostgreSQL), else
//! the state directory. One choice, one set of messages, for both.

use std::path::PathBuf;

use agent_sdk_watchdog::LedgerUrl;
use agent_sdk_watchdog::{FileLedger, SharedLedger};
use watchdog_core::recovery::{Claim, Ledger, LedgerEntry, LedgerError, Marker};
use watchdog_core::recovery::{SubagentKey, SubagentMarker};

/// Where the markers live, as the flags and variables said.
#[derive(Debug, Clone, Default)]
pub struct LedgerChoice {
    /// `--ledger` / `AGENT_WATCHDOG_LEDGER`: a shared ledger; wins over the state directory.
    pub url: Option<LedgerUrl>,
    /// `--state-dir` / `AGENT_WATCHDOG_STATE_DIR` (`None`: the default state directory).
    pub state_dir: Option<PathBuf>,
}

impl LedgerChoice {
    /// Open the chosen ledger. The error is one line, with no password in it.
    pub fn open(&self) -> Result<MarkerLedger, String> {
        match (&self.url, &self.state_dir) {
            (Some(url), _) => SharedLedger::open(url).map(|l| MarkerLedger::Shared(Box::new(l))),
            (None, Some(dir)) => FileLedger::open(dir.clone()).map(MarkerLedger::File),
            (None, None) => FileLedger::open_default().map(MarkerLedger::File),
        }
        .map_err(|e| e.to_string())
    }
}

/// The ledger `run` and `hook` opened.
#[derive(Debug)]
pub enum MarkerLedger {
    /// Files in the state directory.
    File(FileLedger),
    /// A Redis or PostgreSQL server.
    Shared(Box<SharedLedger>),
}

impl MarkerLedger {
    /// Where the marker of `session_id` lives, for the summary: a path, or the ledger's URL
    /// (without its password) and the key or row.
    pub fn marker_place(&self, session_id: &str) -> Option<String> {
        match self {
            MarkerLedger::File(l) => l
                .marker_path(session_id)
                .ok()
                .map(|p| p.display().to_string()),
            MarkerLedger::Shared(l) => l.marker_place(session_id).ok(),
        }
    }
}

impl Ledger for MarkerLedger {
    fn try_claim(&self, session_id: &str, marker: &Marker) -> Result<Claim, LedgerError> {
        match self {
            MarkerLedger::File(l) => Ledger::try_claim(l, session_id, marker),
            MarkerLedger::Shared(l) => Ledger::try_claim(&**l, session_id, marker),
        }
    }
    fn get(&self, session_id: &str) -> Result<Option<LedgerEntry>, LedgerError> {
        match self {
            MarkerLedger::File(l) => Ledger::get(l, session_id),
            MarkerLedger::Shared(l) => Ledger::get(&**l, session_id),
        }
    }
    fn record_notice(&self, session_id: &str) -> Result<bool, LedgerError> {
        match self {
            MarkerLedger::File(l) => Ledger::record_notice(l, session_id),
            MarkerLedger::Shared(l) => Ledger::record_notice(&**l, session_id),
        }
    }
}

impl Ledger<SubagentKey, SubagentMarker> for MarkerLedger {
    fn try_claim(&self, key: &SubagentKey, marker: &SubagentMarker) -> Result<Claim, LedgerError> {
        match self {
            MarkerLedger::File(l) => {
                Ledger::<SubagentKey, SubagentMarker>::try_claim(l, key, marker)
            }
            MarkerLedger::Shared(l) => {
                Ledger::<SubagentKey, SubagentMarker>::try_claim(&**l, key, marker)
            }
        }
    }
    fn get(&self, key: &SubagentKey) -> Result<Option<LedgerEntry<SubagentMarker>>, LedgerError> {
        match self {
            MarkerLedger::File(l) => Ledger::<SubagentKey, SubagentMarker>::get(l, key),
            MarkerLedger::Shared(l) => Ledger::<SubagentKey, SubagentMarker>::get(&**l, key),
        }
    }
    fn record_notice(&self, key: &SubagentKey) -> Result<bool, LedgerError> {
        match self {
            MarkerLedger::File(l) => Ledger::<SubagentKey, SubagentMarker>::record_notice(l, key),
            MarkerLedger::Shared(l) => {
                Ledger::<SubagentKey, SubagentMarker>::record_notice(&**l, key)
            }
        }
    }
}

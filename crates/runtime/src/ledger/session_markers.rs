//! A session's continuation marker and notice record: the [`Ledger`] trait on [`FileLedger`].

use watchdog_core::recovery::{Claim, Ledger, LedgerEntry, LedgerError, Marker};

use super::durable_files::{create_exclusive, exists, now_ms, read_small};
use super::FileLedger;

impl Ledger for FileLedger {
    fn try_claim(&self, session_id: &str, marker: &Marker) -> Result<Claim, LedgerError> {
        let path = self.marker_path(session_id)?;
        let mut json = marker.to_json();
        json.push('\n');
        Ok(if create_exclusive(&path, json.as_bytes())? {
            Claim::Won
        } else {
            Claim::AlreadyClaimed
        })
    }

    fn get(&self, session_id: &str) -> Result<Option<LedgerEntry>, LedgerError> {
        let path = self.marker_path(session_id)?;
        let Some(text) = read_small(&path)? else {
            return Ok(None);
        };
        let marker = Marker::from_json(&text).map_err(|e| {
            let why = match e {
                LedgerError::Corrupt(why) => why,
                other => other.to_string(),
            };
            LedgerError::Corrupt(format!("{}: {why}", path.display()))
        })?;
        if !marker.session_id.eq_ignore_ascii_case(session_id) {
            return Err(LedgerError::Corrupt(format!(
                "{}: holds session id {:?}",
                path.display(),
                marker.session_id
            )));
        }
        let notice_recorded = exists(&self.notice_path(session_id)?)?;
        Ok(Some(LedgerEntry {
            marker,
            notice_recorded,
        }))
    }

    fn record_notice(&self, session_id: &str) -> Result<bool, LedgerError> {
        if !exists(&self.marker_path(session_id)?)? {
            return Ok(false);
        }
        let path = self.notice_path(session_id)?;
        let record = serde_json::json!({
            "session_id": session_id,
            "noticed_at_ms": now_ms(),
        });
        create_exclusive(&path, format!("{record}\n").as_bytes())
    }
}

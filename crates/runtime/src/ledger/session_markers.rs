//! A session's continuation marker and notice record: the [`Ledger`] trait on [`FileLedger`].

use watchdog_core::recovery::{Claim, Ledger, LedgerEntry, LedgerError, Marker};

use super::durable_files::{create_exclusive, exists, read_small};
use super::records::{notice_record, read_marker};
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
        let marker = read_marker(&text, session_id, &path.display())?;
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
        create_exclusive(&path, notice_record(session_id).as_bytes())
    }
}

//! A subagent's continuation marker and notice record: the [`Ledger`]`<SubagentKey, SubagentMarker>` trait on
//! [`FileLedger`], in directories made on first use.

use std::path::PathBuf;

use watchdog_core::recovery::{Claim, LedgerError};
use watchdog_core::recovery::{Ledger, LedgerEntry, SubagentKey, SubagentMarker};

use super::durable_files::{
    create_exclusive, create_private_dir, exists, read_small, sync_dir, unavailable,
};
use super::records::{read_subagent_marker, subagent_notice_record, CONTINUED, NOTICED, SUBAGENTS};
use super::FileLedger;

impl FileLedger {
    /// Where the marker of the subagent `key` lives (whether or not it exists).
    pub fn subagent_marker_path(&self, key: &SubagentKey) -> PathBuf {
        self.dir
            .join(SUBAGENTS)
            .join(CONTINUED)
            .join(key.file_name())
    }

    /// Where the notice record of the subagent `key` lives (whether or not it exists).
    pub fn subagent_notice_path(&self, key: &SubagentKey) -> PathBuf {
        self.dir.join(SUBAGENTS).join(NOTICED).join(key.file_name())
    }

    /// Create the subagent directories (mode 0700) and make them durable.
    fn subagent_dirs(&self) -> Result<(), LedgerError> {
        let top = self.dir.join(SUBAGENTS);
        for sub in [CONTINUED, NOTICED] {
            let path = top.join(sub);
            if !path.is_dir() {
                create_private_dir(&path).map_err(|e| unavailable("create directory", &path, e))?;
                sync_dir(&path).map_err(|e| unavailable("flush directory", &path, e))?;
            }
        }
        for path in [&top, &self.dir] {
            sync_dir(path).map_err(|e| unavailable("flush directory", path, e))?;
        }
        Ok(())
    }
}

impl Ledger<SubagentKey, SubagentMarker> for FileLedger {
    fn try_claim(&self, key: &SubagentKey, marker: &SubagentMarker) -> Result<Claim, LedgerError> {
        self.subagent_dirs()?;
        let mut json = marker.to_json();
        json.push('\n');
        Ok(
            if create_exclusive(&self.subagent_marker_path(key), json.as_bytes())? {
                Claim::Won
            } else {
                Claim::AlreadyClaimed
            },
        )
    }

    fn get(&self, key: &SubagentKey) -> Result<Option<LedgerEntry<SubagentMarker>>, LedgerError> {
        let path = self.subagent_marker_path(key);
        let Some(text) = read_small(&path)? else {
            return Ok(None);
        };
        let marker = read_subagent_marker(&text, key, &path.display())?;
        let notice_recorded = exists(&self.subagent_notice_path(key))?;
        Ok(Some(LedgerEntry {
            marker,
            notice_recorded,
        }))
    }

    fn record_notice(&self, key: &SubagentKey) -> Result<bool, LedgerError> {
        if !exists(&self.subagent_marker_path(key))? {
            return Ok(false);
        }
        self.subagent_dirs()?;
        create_exclusive(
            &self.subagent_notice_path(key),
            subagent_notice_record(key).as_bytes(),
        )
    }
}

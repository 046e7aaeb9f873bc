//! The extension of idle patience: `idle × extend_factor` instead of `idle` before the
//! session's first write (the pre-write extension: a session still reading and planning is
//! allowed longer silences) and while the account's utilization is high. The first completed
//! call of a `--write-tools` tool ends the pre-write one: its tool result, unless it is an
//! error, notes [`Note::Wrote`] (`crate::registry::observe`). The deadlines read the
//! extension in [`Session::next_due`].

use crate::event::ExtendReason;

use super::{LimitsNs, Note, Session};

impl Session {
    /// The extension of idle patience that holds now, if any. With `extend_factor` 1 there is
    /// never one: patience is the same either way.
    pub(crate) fn extension(&self, l: &LimitsNs, high: bool) -> Option<ExtendReason> {
        if l.extended <= l.idle {
            None
        } else if high {
            Some(ExtendReason::HighUtilization)
        } else if !self.note.has(Note::Wrote) {
            Some(ExtendReason::PreWrite)
        } else {
            None
        }
    }
}

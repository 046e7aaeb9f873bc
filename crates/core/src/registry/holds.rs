//! What a host holds back, per session: since when it cannot hand the session's output on
//! ([`Registry::output_blocked`](super::Registry::output_blocked)), and since when it may hold
//! unread lines of it ([`Registry::input_pending`](super::Registry::input_pending)).
//!
//! A side table rather than a field of every session: few sessions have either at a time, and
//! the session's [`Host`] members (`OutputBlocked`, `InputPending`) say when to look here, so
//! an ordinary line never does.

use crate::session::Host;

/// Which hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// The host cannot hand the output on.
    Output,
    /// The host may hold unread lines.
    Input,
}

impl Hold {
    /// The session's [`Host`] member that says the hold is in force.
    pub(super) fn member(self) -> Host {
        match self {
            Hold::Output => Host::OutputBlocked,
            Hold::Input => Host::InputPending,
        }
    }
}

/// The holds in force: (slot, which, since when in registry time).
#[derive(Debug, Default)]
pub(super) struct Holds(Vec<(u32, Hold, u64)>);

impl Holds {
    /// Since when `slot` holds `hold`, if it does.
    pub(super) fn since(&self, slot: u32, hold: Hold) -> Option<u64> {
        self.0
            .iter()
            .find(|(s, h, _)| *s == slot && *h == hold)
            .map(|e| e.2)
    }

    /// `slot` holds `hold` from `since` on (a hold already in force keeps its start).
    pub(super) fn begin(&mut self, slot: u32, hold: Hold, since: u64) {
        if self.since(slot, hold).is_none() {
            self.0.push((slot, hold, since));
        }
    }

    /// `slot` no longer holds `hold`: since when it did, if it did.
    pub(super) fn end(&mut self, slot: u32, hold: Hold) -> Option<u64> {
        let i = self
            .0
            .iter()
            .position(|(s, h, _)| *s == slot && *h == hold)?;
        Some(self.0.swap_remove(i).2)
    }

    /// Forget every hold of `slot` (its session ended or left).
    pub(super) fn forget(&mut self, slot: u32) {
        self.0.retain(|(s, _, _)| *s != slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_keeps_its_start_and_ends_once() {
        let mut h = Holds::default();
        h.begin(3, Hold::Input, 10);
        h.begin(3, Hold::Input, 20);
        h.begin(3, Hold::Output, 15);
        assert_eq!(h.since(3, Hold::Input), Some(10));
        assert_eq!(h.end(3, Hold::Input), Some(10));
        assert_eq!(h.end(3, Hold::Input), None);
        h.forget(3);
        assert_eq!(h.since(3, Hold::Output), None);
    }
}

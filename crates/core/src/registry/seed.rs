//! A session whose clocks are given, not lived: what a host knows of a query's last instants
//! (its last line, progress and tool boundary, whether it wrote or settled) set as they are,
//! so that the registry's own deadlines judge them. The npm package's pure verdict of a
//! timeline (the reference package's `evaluateWatchdog()`, in the wasm crate) is asked this way.

use crate::time::Instant;

use crate::session::Note;
use crate::SessionId;

use super::Registry;

/// The last instants of a session, each no earlier than its registration, for
/// [`Registry::seed`]: a timeline judged by the registry's own deadlines.
#[derive(Debug, Clone, Copy)]
pub struct Seed {
    /// The last line of any kind.
    pub last_line: Instant,
    /// The last progress.
    pub last_progress: Instant,
    /// The last tool boundary.
    pub last_tool: Instant,
    /// A write tool completed.
    pub wrote: bool,
    /// Settled by a `result`, and when. A settled session has seen a line (its `result`),
    /// whatever `seen` says.
    pub settled_at: Option<Instant>,
    /// A line was seen (the startup rule applies until then).
    pub seen: bool,
}

impl Registry {
    fn ns_since_epoch(&self, at: Instant) -> u64 {
        self.epoch
            .and_then(|e| at.checked_duration_since(e))
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX - 1))
    }

    /// Set the clocks of a live session `id` that has seen nothing yet, as `seed` says; its
    /// next deadline follows from them. Nothing is fired here: the next call with a `now`
    /// fires what they made due by then.
    pub fn seed(&mut self, id: SessionId, seed: &Seed) {
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        let [line, progress, tool] =
            [seed.last_line, seed.last_progress, seed.last_tool].map(|t| self.ns_since_epoch(t));
        let settled_at = seed.settled_at.map(|t| self.ns_since_epoch(t));
        let s = self.session_mut(slot);
        if seed.seen {
            s.saw_line();
        }
        s.idle_anchor = line.max(progress);
        s.progress_anchor = progress;
        s.last_tool = tool;
        if seed.wrote {
            s.note.insert(Note::Wrote);
        }
        if let Some(at) = settled_at {
            s.settle(at);
        }
        self.reschedule(slot);
    }
}

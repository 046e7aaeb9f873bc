//! The clocks of a session: what a line, a wait or a pause does to the idle and no-progress
//! anchors (a line starts a new idle spell, progress a new no-progress spell; a human wait, a
//! wait for the host or a paused output moves both by the time it lasted).

use super::{Cold, Host, Note, Phase, Said, Session, Side};

/// Moves an anchor by the paused time that lies after it: a pause over `[b, e)`.
fn shift(x: u64, b: u64, e: u64) -> u64 {
    if x >= e {
        x
    } else if x <= b {
        x.saturating_add(e - b)
    } else {
        e
    }
}

impl Session {
    /// Move the idle anchor, keeping the real last line.
    fn move_idle_anchor(&mut self, c: &mut Cold, to: u64) {
        if !self.side.has(Side::LineMoved) {
            c.pause_or_line = self.idle_anchor;
            self.side.insert(Side::LineMoved);
        }
        self.idle_anchor = to;
    }

    /// Move the no-progress anchor, keeping the real last progress.
    fn move_progress_anchor(&mut self, c: &mut Cold, to: u64) {
        if !self.side.has(Side::ProgressMoved) {
            c.last_progress = self.progress_anchor;
            self.side.insert(Side::ProgressMoved);
        }
        self.progress_anchor = to;
    }

    /// Whether a wait is open: a human wait, or waiting for the host's next message.
    pub(crate) fn paused(&self) -> bool {
        self.phase == Phase::WaitingForHost
            || self.note.has(Note::RequiresAction)
            || self.has_pending_requests()
    }

    /// Settled with the host's input open: the session now waits for its host. Its pause
    /// begins at `now` like a human wait's; after a settle by hand that follows an output
    /// pause (the real last line kept in `pause_or_line`), that earlier instant stays, which
    /// changes nothing: the wait ends with fresh clocks (the host's message, new progress) or
    /// settled (the end of input), where only the linger and the ceiling count.
    /// Not while background tasks are outstanding: the session still works.
    pub(crate) fn begin_host_wait(&mut self, c: &mut Cold, now: u64) {
        if self.phase == Phase::Settled
            && self.host.has(Host::InputOpen)
            && !self.side.has(Side::Background)
        {
            let was_paused = self.paused();
            self.phase = Phase::WaitingForHost;
            if !was_paused && !self.side.has(Side::LineMoved) {
                c.pause_or_line = now;
            }
        }
    }

    /// Before the first line only startup and the ceiling apply. The no-progress clock runs
    /// from registration, but a cap it passed before it applied kills no earlier than the
    /// first line (only possible when `no_progress` is shorter than `startup`).
    /// A session whose clocks run from registration needs no floor: its cap applied all along.
    pub(crate) fn first_line_floor(&mut self, c: &mut Cold, now: u64, no_progress: u64) {
        if !self.clocks_run() {
            let floor = now.saturating_sub(no_progress);
            if floor > self.progress_anchor {
                self.move_progress_anchor(c, floor);
            }
        }
    }

    /// Any line (or boundary): a sign of life; starts a new idle spell.
    pub(crate) fn note_line(&mut self, now: u64) {
        self.saw_line();
        self.said.remove(Said::Extended);
        self.said.remove(Said::StallingIdle);
        self.side.remove(Side::LineMoved);
        self.idle_anchor = now;
    }

    /// Whether the idle and no-progress clocks run: after the first line, or from
    /// registration when the host asked for it.
    pub(crate) fn clocks_run(&self) -> bool {
        self.phase.seen_line() || self.host.has(Host::ClocksFromRegistration)
    }

    /// Progress: also starts a new no-progress spell and un-settles.
    pub(crate) fn note_progress(&mut self, now: u64) {
        self.note_background_progress(now);
        self.phase = Phase::Working;
    }

    /// Progress of a background task after the session's `result`: a new no-progress spell,
    /// but the session stays settled (its turn is over; when the tasks end, it waits again).
    pub(crate) fn note_background_progress(&mut self, now: u64) {
        self.note_line(now);
        self.said.remove(Said::StallingNoProgress);
        self.side.remove(Side::ProgressMoved);
        self.progress_anchor = now;
    }

    /// Begin a human wait (if none is open) at `now`.
    pub(crate) fn begin_wait(&self, c: &mut Cold, now: u64, was_paused: bool) {
        if !was_paused {
            debug_assert!(!self.side.has(Side::LineMoved), "a wait begins with a line");
            c.pause_or_line = now;
        }
    }

    /// If a wait was open and none is now, end the pause: the idle and no-progress clocks
    /// move by the paused time.
    pub(crate) fn end_wait_if_clear(&mut self, c: &mut Cold, now: u64, was_paused: bool) {
        if was_paused && !self.paused() {
            let b = c.pause_or_line;
            self.shift_clocks(c, b, now.max(b));
        }
    }

    /// Time in `[b, e)` does not count toward the idle and no-progress clocks (the host could
    /// not take the output). No effect while a human wait is open: its own pause covers the
    /// same clocks, and ends by shifting them.
    pub(crate) fn pause_clocks(&mut self, c: &mut Cold, b: u64, e: u64) {
        if !self.paused() && b < e {
            self.shift_clocks(c, b, e);
        }
    }

    fn shift_clocks(&mut self, c: &mut Cold, b: u64, e: u64) {
        self.move_idle_anchor(c, shift(self.idle_anchor, b, e));
        self.move_progress_anchor(c, shift(self.progress_anchor, b, e));
        self.shift_work(c, |x| shift(x, b, e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_moves_anchors_by_the_paused_time_after_them() {
        assert_eq!(shift(10, 20, 50), 40);
        assert_eq!(shift(30, 20, 50), 50);
        assert_eq!(shift(60, 20, 50), 60);
    }
}

//! The timer side: each session's next timed event, filed in the deadline queue, and what
//! fires when it is due.

use std::time::Duration;

use crate::time::Instant;

use crate::config::INPUT_HOLD;
use crate::deadline_queue::Slots;
use crate::event::{Backoff, Event, Kill, KillKind, McpCall};
use crate::session::{Cold, Due, End, Host, Note, Said, Session, NEVER};

use super::holds::{Hold, Holds};
use super::tree::{tree_due, Trees};
use super::{make_id, PolicyTable, Registry};

/// What the deadline queue asks about sessions while it settles.
struct Filing<'r> {
    slots: &'r mut [Session],
    facts: Facts<'r>,
}

impl Slots for Filing<'_> {
    fn due(&mut self, slot: u32) -> u64 {
        let Some(s) = self.slots.get_mut(slot as usize).filter(|s| s.is_live()) else {
            return NEVER;
        };
        let t = self
            .facts
            .next_due(s, slot)
            .map_or(NEVER, |(t, _)| held(s, slot, self.facts.holds, t));
        s.queued = t;
        s.note.remove(Note::Raised);
        t
    }

    fn raised(&self, slot: u32) -> bool {
        self.slots
            .get(slot as usize)
            .is_some_and(|s| s.note.has(Note::Raised))
    }
}

/// What a session's next event depends on beyond the session itself: the registry's side
/// tables, borrowed (by the deadline queue while it settles, and by the registry).
struct Facts<'r> {
    cold: &'r [Cold],
    holds: &'r Holds,
    trees: &'r Trees,
    policies: &'r PolicyTable,
    utilization: Option<f64>,
}

impl Facts<'_> {
    /// The session's next event and when it is due, before any hold for unread input.
    fn next_due(&self, s: &Session, slot: u32) -> Option<(u64, Due)> {
        let p = self.policies.get(s.limits);
        let c = &self.cold[slot as usize];
        let tree = tree_due(self.trees, slot, s, &p.ns);
        s.next_due(
            &p.ns,
            p.ns.is_high(self.utilization),
            p.drop_at,
            s.retry_end(c, p.ns.max_backoff),
            s.mcp_floor(c),
            tree,
            s.work_due(c),
        )
    }
}

/// When an event due at `t` may fire: at `t`, or while the host may still hold unread lines
/// of the session ([`Host::InputPending`]), up to [`INPUT_HOLD`] after the later of `t` and the
/// instant the host said so (its word that it read them ends the hold at once:
/// [`Registry::input_pending`]).
fn held(s: &Session, slot: u32, holds: &Holds, t: u64) -> u64 {
    if !s.host.has(Host::InputPending) {
        return t;
    }
    let since = holds.since(slot, Hold::Input).unwrap_or(t);
    t.max(since).saturating_add(INPUT_HOLD_NS)
}

/// Since when the host cannot hand the session's output on, or [`NEVER`].
fn blocked_since(s: &Session, slot: u32, holds: &Holds) -> u64 {
    if !s.host.has(Host::OutputBlocked) {
        return NEVER;
    }
    holds.since(slot, Hold::Output).unwrap_or(NEVER)
}

/// [`INPUT_HOLD`] in nanoseconds.
const INPUT_HOLD_NS: u64 = INPUT_HOLD.as_nanos() as u64;

impl Registry {
    /// [`held`] for a live slot.
    fn held(&self, slot: u32, t: u64) -> u64 {
        held(self.session(slot), slot, &self.holds, t)
    }

    pub(super) fn next_of(&self, slot: u32) -> Option<(u64, Due)> {
        let facts = Facts {
            cold: &self.cold,
            holds: &self.holds,
            trees: &self.trees,
            policies: &self.policies,
            utilization: self.utilization,
        };
        facts.next_due(self.session(slot), slot)
    }

    /// Note the session's next event in the deadline queue. A later event than where the
    /// session is filed needs no queue work (the queue asks again when it gets there); if the
    /// entry is in the queue's near heap, the session notes [`Note::Raised`] (in its own cache
    /// line, not the queue's), and the queue re-files it when it reaches the heap's top.
    ///
    /// Returns whether the queue may need settling (false: neither the queue nor the mark
    /// the queue reads changed).
    pub(super) fn reschedule(&mut self, slot: u32) -> bool {
        let t = self
            .next_of(slot)
            .map_or(NEVER, |(t, _)| self.held(slot, t));
        let horizon = self.queue.horizon();
        let s = self.session_mut(slot);
        if s.queued != NEVER && t >= s.queued {
            if t > s.queued && s.queued < horizon && !s.note.has(Note::Raised) {
                s.note.insert(Note::Raised);
                return true;
            }
            return false;
        }
        s.queued = t;
        s.note.remove(Note::Raised);
        self.queue.set(slot, t);
        true
    }

    /// Let the deadline queue re-file what it reached (see `DeadlineQueue::settle`).
    pub(super) fn settle_queue(&mut self, now: u64) {
        let Registry {
            queue,
            slots,
            cold,
            holds,
            trees,
            policies,
            utilization,
            ..
        } = self;
        queue.settle(
            now,
            &mut Filing {
                slots,
                facts: Facts {
                    cold,
                    holds,
                    trees,
                    policies,
                    utilization: *utilization,
                },
            },
        );
    }

    /// What a call leaves behind: every event due at or before `t` fired, in time order
    /// ([`fire_due`](Self::fire_due)); where the host checks, only the queue settled. Leaves
    /// the queue settled.
    pub(super) fn run_due(&mut self, t: u64) {
        if self.checked_by_host {
            self.settle_queue(t);
        } else {
            self.fire_due(t);
        }
    }

    /// Fire every event due at or before `t`, in time order; leaves the queue settled.
    pub(super) fn fire_due(&mut self, t: u64) {
        loop {
            self.settle_queue(t);
            let Some(slot) = self.queue.pop_due(t) else {
                break;
            };
            let Some(s) = self.slots.get_mut(slot as usize).filter(|s| s.is_live()) else {
                continue;
            };
            s.queued = NEVER;
            s.note.remove(Note::Raised);
            if let Some((due_at, due)) = self.next_of(slot) {
                // Dated at its own instant, even when a hold made it fire later.
                if self.held(slot, due_at) <= t {
                    self.fire(slot, due_at, due);
                }
            }
            self.reschedule(slot);
        }
    }

    pub(super) fn fire(&mut self, slot: u32, at: u64, due: Due) {
        let id = make_id(slot, self.session(slot).generation);
        match due {
            Due::Extended(reason) => {
                self.session_mut(slot).said.insert(Said::Extended);
                self.events.push_back(Event::Extended { id, reason });
            }
            Due::Stalling(clock, kill_at) => {
                let said = match clock {
                    crate::event::StallClock::Idle => Said::StallingIdle,
                    crate::event::StallClock::NoProgress => Said::StallingNoProgress,
                };
                self.session_mut(slot).said.insert(said);
                self.events.push_back(Event::Stalling {
                    id,
                    clock,
                    remaining: Duration::from_nanos(kill_at.saturating_sub(at)),
                });
            }
            Due::TaskSilent(silence) => {
                let (s, c) = self.parts_mut(slot);
                for task in s.notice_silent_tasks(c, at, silence) {
                    self.events.push_back(Event::TaskSilent { id, task });
                }
            }
            Due::Kill(kind) => {
                let kill = self.build_kill(slot, at, kind);
                let (s, c) = self.parts_mut(slot);
                s.end = End::Killed;
                c.rare_or_new().kill = Some(Box::new(kill.clone()));
                self.events.push_back(Event::Killed(kill));
            }
        }
    }

    pub(super) fn build_kill(&self, slot: u32, at: u64, kind: KillKind) -> Kill {
        let s = self.session(slot);
        let c = &self.cold[slot as usize];
        let p = self.policies.get(s.limits);
        let since = |x: u64| Duration::from_nanos(at.saturating_sub(x));
        Kill {
            id: make_id(slot, s.generation),
            kind,
            at: self.instant_or_epoch(at),
            elapsed: since(s.started),
            since_progress: since(s.last_progress(c)),
            since_keepalive: since(s.last_line(c)),
            since_tool: since(s.last_tool),
            last_signal: s.last_signal,
            utilization: self.utilization,
            extension: s.extension(&p.ns, p.ns.is_high(self.utilization)),
            mcp_call: s.oldest_mcp(c).map(|m| McpCall {
                tool: m.tool.to_string(),
                outstanding: since(m.started),
            }),
            output_blocked: match blocked_since(s, slot, &self.holds) {
                NEVER => None,
                b => Some(since(b)),
            },
            backoff: s.storm(c).map(|st| {
                Box::new(Backoff {
                    attempts: st.attempts,
                    status: st.status,
                    error: st.error.as_deref().map(str::to_owned),
                    last_delay: Duration::from_nanos(st.last_delay),
                    lasted: since(st.since),
                })
            }),
            tree: self.tree_evidence(slot, at, kind),
            outstanding: s.outstanding(c, at).map(Box::new),
        }
    }

    /// The earliest instant at which [`Registry::handle_timeout`] has work, if any. It may be
    /// early (a wake-up that finds nothing due is a cheap no-op); it is never later than a
    /// deadline. After `handle_timeout(now)` it is later than `now`, or `None`.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let next = self.queue.peek().unwrap_or(NEVER).min(self.rate.expiry);
        if next == NEVER {
            return None;
        }
        self.instant(next)
    }

    /// Process every deadline due at or before `now`. Cheap when nothing is due.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.check(now);
    }

    /// The next pending event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

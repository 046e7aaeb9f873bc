//! When a session's deadlines fall due: [`Session::next_due`] gives the earliest timed event
//! (a kill, an idle extension noted, a stalling warning) from the anchors and the policy. The
//! idle deadline: the last line (or the end of an announced back-off) plus the patience, the
//! extended one before the first write or while utilization is high; the no-progress cap: the
//! last progress (or the end of an announced back-off) plus the limit, never before an
//! outstanding MCP call's floor or a busy tool's (the process tree's evidence); startup before
//! the first line; linger once settled (unless background tasks are outstanding: then the
//! session still works); the ceiling and the memory guard always; the output-blocked bound
//! while the host cannot hand the output on; none of idle and no-progress while a wait or a
//! blocked output holds their clocks.
//!
//! What the session's outstanding work adds ([`WorkDue`]): background tasks hold the idle kill
//! until each one's own deadline (`task_silence` after its last sign of life) and name it
//! `task_silent`, and each task silent past its deadline is noticed once; after a `result`, a
//! declared wakeup bounds the wait (its due time plus the idle patience, kill
//! `wakeup_missed`), holding the linger until then; the host's oldest unanswered control
//! request is bounded by `control_timeout` (kill `unanswered`) whatever the session does; a
//! hook of Claude Code's that runs holds the idle kill until Claude Code's own timeout.

use crate::event::{ExtendReason, KillKind, StallClock};

use super::{End, Host, LimitsNs, Phase, Said, Session, Side, WorkDue, NEVER};

/// What the host's facts add to a session's deadlines: the process tree's
/// ([`crate::evidence`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostDue {
    /// A busy tool's hold: the no-progress kill comes no earlier (0: none).
    pub busy_floor: u64,
    /// When the memory guard kills ([`NEVER`]: not over it).
    pub memory_at: u64,
}

impl HostDue {
    /// Nothing from the host.
    pub(crate) const NONE: HostDue = HostDue {
        busy_floor: 0,
        memory_at: NEVER,
    };
}

/// A timed event of one session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Due {
    Kill(KillKind),
    Extended(ExtendReason),
    /// A clock passed `warn_at`; the second field is that clock's kill instant.
    Stalling(StallClock, u64),
    /// A background task passed its own deadline (the field: its silence, in ns): noticed.
    TaskSilent(u64),
}

impl Session {
    /// The earliest timed event of this session, with its instant.
    ///
    /// `high`: the utilization is at or above this session's threshold; `drop_at`: the last
    /// instant the utilization fell below it (an extension withdrawn then kills no earlier
    /// than then).
    /// `retry_end`: [`Session::retry_end`] (neither clock counts an announced back-off);
    /// `mcp_floor`: [`Session::mcp_floor`] (the no-progress kill comes no earlier); `host`: a
    /// busy tool's hold (the no-progress kill comes no earlier, and its warning moves with it)
    /// and the memory guard's kill; `work`: [`Session::work_due`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn next_due(
        &self,
        l: &LimitsNs,
        high: bool,
        drop_at: u64,
        retry_end: u64,
        mcp_floor: u64,
        host: HostDue,
        work: WorkDue,
    ) -> Option<(u64, Due)> {
        let HostDue {
            busy_floor,
            memory_at,
        } = host;
        if self.end != End::Open {
            return None;
        }
        let mut kill = (self.started.saturating_add(l.ceiling), KillKind::Ceiling);
        let mut take = |t: u64, k: KillKind| {
            if (t, k) < kill {
                kill = (t, k);
            }
        };
        let blocked = self.host.has(Host::OutputBlocked);
        take(memory_at, KillKind::Memory);
        if work.asked != NEVER {
            take(
                work.asked.saturating_add(l.control_timeout),
                KillKind::Unanswered,
            );
        }
        if !self.phase.seen_line() {
            take(self.started.saturating_add(l.startup), KillKind::Startup);
        }
        // Before the first line only startup and the ceiling apply, unless the clocks run
        // from registration.
        if !self.clocks_run() {
        } else if self.phase.is_settled() && !self.side.has(Side::Background) {
            // A declared wakeup is a wait no person needs to end: due + the idle patience.
            let wakeup = (work.wakeup != NEVER).then(|| work.wakeup.saturating_add(l.idle));
            // Waiting for the host's next message is not a hang: no linger until its input
            // ends (but a declared wakeup bounds it).
            if self.phase != Phase::WaitingForHost {
                let linger = self.settled_at.saturating_add(l.linger);
                match wakeup {
                    // The linger waits for the wakeup.
                    Some(w) => take(w.max(linger), KillKind::WakeupMissed),
                    None => take(linger, KillKind::Linger),
                }
            } else if let Some(w) = wakeup {
                take(w, KillKind::WakeupMissed);
            }
        } else if !self.paused() && !blocked {
            let ext = self.extension(l, high);
            let (patience, warn_after) = if ext.is_some() {
                (l.extended, l.warn_extended)
            } else {
                (l.idle, l.warn_idle)
            };
            let base = self.idle_anchor.max(retry_end);
            let np_base = self.progress_anchor.max(retry_end);
            // A hook that runs: Claude Code cancels it itself (its default timeout, a tick).
            let idle_kill = base
                .saturating_add(patience)
                .max(drop_at)
                .max(work.hook_floor);
            // Background tasks: each one's own deadline, from its last sign of life.
            let silence = if l.task_silence == NEVER {
                patience
            } else {
                l.task_silence
            };
            let (idle_kill, idle_kind) = if work.tasks {
                // The idle kill waits for the last task's own deadline, and names the tasks.
                let floor = work.task_latest.saturating_add(silence);
                (idle_kill.max(floor), KillKind::TaskSilent)
            } else {
                (idle_kill, KillKind::Idle)
            };
            let np_stream = np_base.saturating_add(l.no_progress);
            let np_kill = np_stream.max(mcp_floor).max(busy_floor);
            take(idle_kill, idle_kind);
            take(np_kill, KillKind::NoProgress);
            let kill_t = kill.0;
            let mut warn: Option<(u64, Due)> = None;
            let mut offer = |t: u64, d: Due| {
                let earlier = match warn {
                    Some((w, _)) => t < w,
                    None => true,
                };
                if t < kill_t && earlier {
                    warn = Some((t, d));
                }
            };
            if let Some(reason) = ext {
                if !self.said.has(Said::Extended) {
                    offer(base.saturating_add(l.idle), Due::Extended(reason));
                }
            }
            if work.task_unnoticed != NEVER {
                let t = work.task_unnoticed.saturating_add(silence);
                offer(t, Due::TaskSilent(silence));
            }
            if !self.said.has(Said::StallingIdle) {
                let t = base.saturating_add(warn_after).max(drop_at);
                offer(t, Due::Stalling(StallClock::Idle, idle_kill));
            }
            if !self.said.has(Said::StallingNoProgress) {
                // A busy tool's hold moves the warning with the kill: it comes when the tool
                // went quiet (or the cap nears), not while it works.
                let t = if busy_floor > np_stream.max(mcp_floor) {
                    busy_floor.saturating_sub(l.no_progress - l.warn_no_progress)
                } else {
                    np_base.saturating_add(l.warn_no_progress)
                };
                offer(t, Due::Stalling(StallClock::NoProgress, np_kill));
            }
            if warn.is_some() {
                return warn;
            }
        }
        (kill.0 != NEVER).then_some((kill.0, Due::Kill(kill.1)))
    }
}

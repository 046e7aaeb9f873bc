//! The wakeups a session declared: a `ScheduleWakeup` (the dynamic `/loop`'s next tick) or a
//! `CronCreate` job, each with the due time its tool's result states (`scheduledFor`,
//! `nextFireAt`, epoch milliseconds, read against the result line's own `timestamp`, else the
//! registry's wall clock). A declared due time is a wait that needs no person: after the
//! session's `result` it is bounded (due + the idle patience), where before only the linger
//! or nothing (waiting for the host) counted. A wakeup is over when Claude Code starts the
//! turn it scheduled (`command_lifecycle` `started`, or a top-level `system/init` once it is
//! due), or when the model cancels it (`ScheduleWakeup` with `stop`, a `CronDelete`). A
//! recurring job counts until its first fire: its later times are not printed.
//!
//! The calls of `Monitor` are read here too (their results state the monitor's expiry,
//! `timeoutMs`), for the background task the monitor runs as ([`super::tasks`]).

use super::{id_hash, Cold, Session, Side, NEVER};
use crate::event::{WakeupNote, WakeupTool};
use crate::view::{Field, LineView};

/// At most this many wakeups (and calls awaiting their results) are remembered per session.
const MAX_WAKEUPS: usize = 64;

/// A top-level turn that begins this long before a wakeup's due time still counts as its
/// firing (Claude Code rounds a wakeup to its clock's second; the two clocks may differ).
const FIRE_SLACK: u64 = 5_000_000_000;

/// A call of a tool that declares or cancels a wait, awaiting its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Declaring {
    /// [`id_hash`] of its `tool_use` id.
    pub hash: u64,
    /// Which tool.
    pub tool: WaitTool,
}

/// The tools whose results the wakeups and monitors read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitTool {
    /// A wakeup (`ScheduleWakeup`, `CronCreate`).
    Declares(WakeupTool),
    /// `CronDelete`: the jobs are cancelled.
    CronDelete,
    /// `Monitor`: a background task with an expiry.
    Monitor,
}

impl WaitTool {
    /// The tool of a `tool_use` block's name, if it is one of them.
    pub(crate) fn of_name(name: &str) -> Option<WaitTool> {
        Some(match name {
            "ScheduleWakeup" => WaitTool::Declares(WakeupTool::ScheduleWakeup),
            "CronCreate" => WaitTool::Declares(WakeupTool::CronCreate),
            "CronDelete" => WaitTool::CronDelete,
            "Monitor" => WaitTool::Monitor,
            _ => return None,
        })
    }
}

/// One declared wakeup, not yet fired.
#[derive(Debug, Clone)]
pub(crate) struct Wakeup {
    /// The tool that declared it.
    pub tool: WakeupTool,
    /// Its call's `tool_use` id.
    pub tool_use_id: Box<str>,
    /// When it is due (registry time; not moved by pauses: it is the wall clock's).
    pub due: u64,
}

impl Wakeup {
    fn note(&self, at: u64) -> WakeupNote {
        use std::time::Duration;
        WakeupNote {
            tool: self.tool,
            tool_use_id: self.tool_use_id.to_string(),
            overdue: Duration::from_nanos(at.saturating_sub(self.due)),
            due_in: Duration::from_nanos(self.due.saturating_sub(at)),
        }
    }
}

/// Milliseconds of a JSON number field that is finite and not negative.
fn ms(f: Option<Field<'_>>) -> Option<f64> {
    f?.as_f64().filter(|n| n.is_finite() && *n >= 0.0)
}

impl Session {
    /// A top-level `tool_use` block of `name` with id `id`: a call of a tool that declares
    /// or cancels a wait is remembered until its result.
    pub(crate) fn note_wait_call(&mut self, c: &mut Cold, id: &str, name: &str) {
        let Some(tool) = WaitTool::of_name(name) else {
            return;
        };
        let w = c.waits_or_new();
        if w.declaring.len() < MAX_WAKEUPS {
            w.declaring.push(Declaring {
                hash: id_hash(id),
                tool,
            });
        }
        self.side.insert(Side::Waits);
    }

    /// A top-level `user` line's `tool_result` for `tool_use_id` (`is_error` as it says), at
    /// `now`: the result of a call that declares or cancels a wait says what it did (its
    /// `tool_use_result`). `wall_now`: the wall clock at `now` by the registry's anchor, if
    /// any (the line's own `timestamp` is preferred).
    pub(crate) fn read_wait_result(
        &mut self,
        c: &mut Cold,
        view: &LineView<'_>,
        tool_use_id: &str,
        is_error: bool,
        now: u64,
        wall_now: Option<u64>,
    ) {
        if !self.side.has(Side::Waits) {
            return;
        }
        let h = id_hash(tool_use_id);
        let Some(w) = c.waits_mut() else { return };
        let Some(i) = w.declaring.iter().position(|d| d.hash == h) else {
            return;
        };
        let call = w.declaring.swap_remove(i);
        let out = view.member("tool_use_result");
        // The wall clock of this line: its own `timestamp` (Claude Code's clock, the one its
        // due times are on), else the registry's anchor.
        let wall = || -> Option<f64> {
            let stamp = view.member("timestamp").and_then(|f| f.as_str());
            stamp
                .and_then(|s| crate::wall::parse_iso_ms(&s))
                .map(|ms| ms as f64)
                .or(wall_now.map(|w| w as f64))
        };
        let due_of = |at_ms: f64| -> Option<u64> {
            let delay_ms = (at_ms - wall()?).max(0.0);
            Some(now.saturating_add(super::ms_to_ns(delay_ms)))
        };
        if !is_error {
            match call.tool {
                WaitTool::Declares(tool) => {
                    let stopped = out
                        .and_then(|o| o.member("stopped"))
                        .and_then(|f| f.as_bool())
                        == Some(true);
                    let key = match tool {
                        WakeupTool::ScheduleWakeup => "scheduledFor",
                        WakeupTool::CronCreate => "nextFireAt",
                    };
                    if stopped {
                        w.wakeups.retain(|k| k.tool != tool);
                    } else if let Some(due) = ms(out.and_then(|o| o.member(key)))
                        .filter(|at| *at > 0.0)
                        .and_then(due_of)
                    {
                        if w.wakeups.len() < MAX_WAKEUPS {
                            w.wakeups.push(Wakeup {
                                tool,
                                tool_use_id: Box::from(tool_use_id),
                                due,
                            });
                        }
                    }
                }
                WaitTool::CronDelete => w.wakeups.retain(|k| k.tool != WakeupTool::CronCreate),
                WaitTool::Monitor => {
                    let timeout = ms(out.and_then(|o| o.member("timeoutMs"))).unwrap_or(0.0);
                    if timeout > 0.0 {
                        let until = now.saturating_add(super::ms_to_ns(timeout));
                        self.note_task_expiry(c, h, until);
                    }
                }
            }
        }
        self.sync_waits(c);
    }

    /// A top-level line of a turn Claude Code started itself at `now`: a `command_lifecycle`
    /// `started` line (`lifecycle`) fires the wakeup due first; a `system/init` fires every
    /// wakeup due by now.
    pub(crate) fn read_wakeup_fired(&mut self, c: &mut Cold, now: u64, lifecycle: bool) {
        if !self.side.has(Side::Waits) {
            return;
        }
        let Some(w) = c.waits_mut() else { return };
        let before = w.wakeups.len();
        if lifecycle {
            if let Some(i) = (0..w.wakeups.len()).min_by_key(|&i| w.wakeups[i].due) {
                w.wakeups.swap_remove(i);
            }
        } else {
            w.wakeups.retain(|k| k.due > now.saturating_add(FIRE_SLACK));
        }
        // A wakeup fired: a settled session's linger counts from its turn, not from the
        // result the wakeup held it past.
        if w.wakeups.len() < before && self.phase.is_settled() {
            self.settled_at = self.settled_at.max(now);
        }
        self.sync_waits(c);
    }

    /// Note whether waits are outstanding (after `wakeups`, `declaring` or `hooks` changed).
    pub(super) fn sync_waits(&mut self, c: &mut Cold) {
        let any = c.waits().is_some_and(|w| {
            !w.wakeups.is_empty() || !w.declaring.is_empty() || !w.hooks.is_empty()
        });
        self.side.set(Side::Waits, any);
        if !any {
            c.free_idle_work();
        }
    }

    /// The earliest due time of a declared wakeup, or [`NEVER`].
    pub(crate) fn wakeup_due(&self, c: &Cold) -> u64 {
        if !self.side.has(Side::Waits) {
            return NEVER;
        }
        c.waits()
            .and_then(|w| w.wakeups.iter().map(|k| k.due).min())
            .unwrap_or(NEVER)
    }

    /// The declared wakeups as a receipt states them at `at`, the one due first first.
    pub(crate) fn wakeup_notes(&self, c: &Cold, at: u64) -> Vec<WakeupNote> {
        if !self.side.has(Side::Waits) {
            return Vec::new();
        }
        let mut wakeups: Vec<&Wakeup> = c
            .waits()
            .map(|w| w.wakeups.iter().collect())
            .unwrap_or_default();
        wakeups.sort_by_key(|k| k.due);
        wakeups.into_iter().map(|k| k.note(at)).collect()
    }
}

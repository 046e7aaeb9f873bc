//! What a session waits on that is not a hang: an announced back-off storm (Claude Code says
//! with `system/api_retry` that the API failed and when it will try again), background tasks
//! (subagents, shells and monitors that run in the background: after a `result` the session
//! is still working, not waiting; `tasks`), the wakeups it declared (`wakeups`), Claude
//! Code's hooks while they run (`hooks`) and the host's control requests waiting for their
//! answers (`asked`). Kept in [`Work`], allocated on
//! first use; the session's members (`Side::Retry`, `Side::Background`, `Side::Waits`,
//! `Host::Asked`) say when to look at it, so an ordinary line never does.

use super::asked::Asked;
use super::hooks::RunningHook;
use super::tasks::Task;
use super::wakeups::{Declaring, Wakeup};
use super::{Cold, Session, Side, NEVER};
use crate::view::LineView;

/// What a session waits on that is not a hang.
#[derive(Debug, Default)]
pub(crate) struct Work {
    /// The announced back-off storm (valid while [`Side::Retry`]).
    pub storm: Option<Storm>,
    /// The background tasks outstanding ([`Side::Background`] while not empty).
    pub background: Vec<Task>,
    /// What is rarer still, boxed apart (a storm is common: its box stays small).
    pub waits: Option<Box<Waits>>,
}

/// Declared wakeups, the calls that declare them, Claude Code's running hooks and the host's
/// unanswered control requests.
#[derive(Debug, Default)]
pub(crate) struct Waits {
    /// The wakeups declared and not yet fired ([`Side::Waits`] while this, `declaring` or
    /// `hooks` is not empty).
    pub wakeups: Vec<Wakeup>,
    /// The calls of the tools that declare or cancel a wait, whose results are still to come.
    pub declaring: Vec<Declaring>,
    /// The host's control requests not yet answered ([`Host::Asked`](super::Host::Asked)
    /// while not empty).
    pub asked: Vec<Asked>,
    /// Claude Code's hooks that run ([`Side::Waits`] while not empty).
    pub hooks: Vec<RunningHook>,
}

impl Waits {
    fn is_empty(&self) -> bool {
        self.wakeups.is_empty()
            && self.declaring.is_empty()
            && self.asked.is_empty()
            && self.hooks.is_empty()
    }
}

impl Work {
    fn is_idle(&self) -> bool {
        self.storm.is_none() && self.background.is_empty() && self.waits.is_none()
    }
}

impl Cold {
    /// The declared waits, running hooks and host requests, if any.
    pub(crate) fn waits(&self) -> Option<&Waits> {
        self.work()?.waits.as_deref()
    }

    /// The declared waits, running hooks and host requests, if any, to change.
    pub(crate) fn waits_mut(&mut self) -> Option<&mut Waits> {
        self.work_mut()?.waits.as_deref_mut()
    }
}

/// What a session's outstanding work adds to its deadlines ([`Session::work_due`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WorkDue {
    /// Background tasks are outstanding.
    pub tasks: bool,
    /// The latest anchor of a task's own deadline (its last sign of life, or a monitor's
    /// declared expiry if later), or 0.
    pub task_latest: u64,
    /// The earliest anchor of a task not yet noticed silent, or [`NEVER`].
    pub task_unnoticed: u64,
    /// The earliest due time of a declared wakeup, or [`NEVER`].
    pub wakeup: u64,
    /// The earliest instant a host control request still waiting was sent (or last showed
    /// progress), or [`NEVER`].
    pub asked: u64,
    /// The earliest instant of the idle kill while Claude Code's hooks run, or 0.
    pub hook_floor: u64,
}

impl WorkDue {
    /// Nothing outstanding.
    pub(crate) const NONE: WorkDue = WorkDue {
        tasks: false,
        task_latest: 0,
        task_unnoticed: NEVER,
        wakeup: NEVER,
        asked: NEVER,
        hook_floor: 0,
    };
}

/// Announced retries with no progress after their back-off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Storm {
    /// The first announcement (moved by pauses, as the clocks are).
    pub since: u64,
    /// The latest end of an announced back-off (moved by pauses).
    pub end: u64,
    /// Retries announced.
    pub attempts: u32,
    /// The last one's `error_status`.
    pub status: Option<u16>,
    /// The last one's `error`.
    pub error: Option<Box<str>>,
    /// The last announced delay.
    pub last_delay: u64,
}

/// One announced retry, as read from its line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Retry {
    pub delay: u64,
    pub status: Option<u16>,
    pub error: Option<Box<str>>,
}

impl Retry {
    /// A `system/api_retry` line's announcement (`retry_delay_ms`, `error_status`, `error`);
    /// a missing or bad delay is 0 (still a retry of the storm).
    pub(crate) fn of_line(view: &LineView<'_>) -> Retry {
        let delay = view.retry_delay_ms().map_or(0, super::ms_to_ns);
        let status = view
            .member("error_status")
            .and_then(|f| f.as_f64())
            .filter(|n| n.fract() == 0.0 && (0.0..=999.0).contains(n))
            .map(|n| n as u16);
        let error = view.error().map(|e| Box::from(&*e));
        Retry {
            delay,
            status,
            error,
        }
    }
}

impl Cold {
    /// The work state, allocated on first use.
    pub(super) fn work_or_new(&mut self) -> &mut Work {
        self.rare_or_new().work.get_or_insert_with(Box::default)
    }

    /// The declared waits, running hooks and host requests, allocated on first use.
    pub(super) fn waits_or_new(&mut self) -> &mut Waits {
        self.work_or_new().waits.get_or_insert_with(Box::default)
    }

    /// Free the work state once nothing in it is needed: no storm, no task, no wakeup, no
    /// hook, no request (a session that saw one announced retry in its life would otherwise
    /// keep the box to its end).
    pub(super) fn free_idle_work(&mut self) {
        if let Some(w) = self.work_mut() {
            if w.waits.as_deref().is_some_and(Waits::is_empty) {
                w.waits = None;
            }
        }
        if let Some(r) = self.rare_mut() {
            if r.work.as_deref().is_some_and(Work::is_idle) {
                r.work = None;
            }
        }
        self.compact();
    }
}

impl Session {
    /// An announced retry at `now`: the storm begins (or goes on), and its back-off ends at
    /// `now + delay` at the earliest.
    pub(crate) fn note_retry(&mut self, c: &mut Cold, now: u64, retry: Retry) {
        let end = now.saturating_add(retry.delay);
        let going_on = self.side.has(Side::Retry);
        let w = c.work_or_new();
        match w.storm.as_mut().filter(|_| going_on) {
            Some(st) => {
                st.end = st.end.max(end);
                st.attempts = st.attempts.saturating_add(1);
                st.status = retry.status;
                st.error = retry.error;
                st.last_delay = retry.delay;
            }
            None => {
                w.storm = Some(Storm {
                    since: now,
                    end,
                    attempts: 1,
                    status: retry.status,
                    error: retry.error,
                    last_delay: retry.delay,
                });
            }
        }
        self.side.insert(Side::Retry);
    }

    /// The storm under way, if any.
    pub(crate) fn storm<'c>(&self, c: &'c Cold) -> Option<&'c Storm> {
        if !self.side.has(Side::Retry) {
            return None;
        }
        c.work()?.storm.as_ref()
    }

    /// Forget a storm that progress after its back-off ended: the API answers again. What it
    /// kept is freed with it.
    pub(crate) fn drop_past_retry(&mut self, c: &mut Cold) {
        if self
            .storm(c)
            .is_some_and(|st| self.progress_anchor >= st.end)
        {
            self.side.remove(Side::Retry);
            if let Some(w) = c.work_mut() {
                w.storm = None;
            }
            c.free_idle_work();
        }
    }

    /// Move the storm's and the background tasks' instants as the clocks move over a pause
    /// `[b, e)` (a declared wakeup's due time and the host's requests are the wall clock's:
    /// a pause does not move them).
    pub(crate) fn shift_work(&mut self, c: &mut Cold, shift: impl Fn(u64) -> u64) {
        let (retry, tasks) = (self.side.has(Side::Retry), self.side.has(Side::Background));
        if !retry && !tasks {
            return;
        }
        let Some(w) = c.work_mut() else { return };
        if let Some(st) = w.storm.as_mut().filter(|_| retry) {
            st.since = shift(st.since);
            st.end = shift(st.end);
        }
        for task in &mut w.background {
            task.life = shift(task.life);
        }
    }
}

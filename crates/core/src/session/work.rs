//! What a session waits on that is not a hang: an announced back-off storm (Claude Code says
//! with `system/api_retry` that the API failed and when it will try again) and background
//! tasks (subagents and Bash commands that run in the background: after a `result` the session
//! is still working, not waiting). Kept in [`Work`], allocated on first use; the session's
//! members (`Side::Retry`, `Side::Background`) say when to look at it, so an ordinary line never does.

use super::{id_hash, Cold, Session, Side};
use crate::view::{Field, LineView};

/// At most this many background tasks are remembered per session (a hostile stream cannot
/// grow a session without bound; extra ids are ignored).
const MAX_TASKS: usize = 64;

/// What a session waits on that is not a hang.
#[derive(Debug, Default)]
pub(crate) struct Work {
    /// The announced back-off storm (valid while [`Side::Retry`]).
    pub storm: Option<Storm>,
    /// The [`id_hash`]es of the background tasks outstanding ([`Side::Background`] while not empty).
    pub background: Vec<u64>,
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

fn work(c: &mut Cold) -> &mut Work {
    c.rare_or_new().work.get_or_insert_with(Box::default)
}

/// Free the work state once nothing in it is needed: no storm, no background task (a session
/// that saw one announced retry in its life would otherwise keep the box to its end).
fn free_idle_work(c: &mut Cold) {
    if let Some(r) = c.rare_mut() {
        if r.work
            .as_deref()
            .is_some_and(|w| w.storm.is_none() && w.background.is_empty())
        {
            r.work = None;
        }
    }
    c.compact();
}

/// Whether a task status ends the task.
fn ended(status: &str) -> bool {
    matches!(
        status,
        "completed" | "failed" | "killed" | "stopped" | "cancelled"
    )
}

impl Session {
    /// An announced retry at `now`: the storm begins (or goes on), and its back-off ends at
    /// `now + delay` at the earliest.
    pub(crate) fn note_retry(&mut self, c: &mut Cold, now: u64, retry: Retry) {
        let end = now.saturating_add(retry.delay);
        let going_on = self.side.has(Side::Retry);
        let w = work(c);
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
            free_idle_work(c);
        }
    }

    /// Move the storm's instants as the clocks move over a pause `[b, e)`.
    pub(crate) fn shift_storm(&mut self, c: &mut Cold, shift: impl Fn(u64) -> u64) {
        if !self.side.has(Side::Retry) {
            return;
        }
        if let Some(st) = c.work_mut().and_then(|w| w.storm.as_mut()) {
            st.since = shift(st.since);
            st.end = shift(st.end);
        }
    }

    /// A line that says which background tasks are outstanding (`system/` subtype `subtype`):
    /// `background_tasks_changed` holds the whole live set; `task_started` with
    /// `is_backgrounded: true` adds one, `task_updated` adds one moved to the background and
    /// removes one that ended, `task_notification` removes one. Ambient tasks (Claude Code's
    /// own, not the session's work) never count. Returns whether the set became empty.
    pub(crate) fn read_background(
        &mut self,
        c: &mut Cold,
        subtype: &str,
        view: &LineView<'_>,
    ) -> bool {
        let before = self.side.has(Side::Background);
        let ambient = |f: Option<Field<'_>>| f.and_then(|a| a.as_bool()) == Some(true);
        match subtype {
            "background_tasks_changed" => {
                let Some(tasks) = view.member("tasks") else {
                    return false;
                };
                let mut ids = Vec::new();
                tasks.for_each_element(|t| {
                    let id = t.member("task_id").and_then(|f| f.as_str());
                    if let (Some(id), false) = (id, ambient(t.member("ambient"))) {
                        if ids.len() < MAX_TASKS {
                            ids.push(id_hash(&id));
                        }
                    }
                });
                if before || !ids.is_empty() {
                    work(c).background = ids;
                }
            }
            "task_started" | "task_updated" | "task_notification" => {
                let Some(id) = view.task_id() else {
                    return false;
                };
                let h = id_hash(&id);
                let status = view.task_status();
                let backgrounded = match subtype {
                    "task_started" => view.member("is_backgrounded"),
                    "task_updated" => view
                        .member("patch")
                        .and_then(|p| p.member("is_backgrounded")),
                    _ => None,
                };
                let gone = subtype == "task_notification" || status.as_deref().is_some_and(ended);
                if gone {
                    if before {
                        work(c).background.retain(|x| *x != h);
                    }
                } else if backgrounded.and_then(|b| b.as_bool()) == Some(true)
                    && !ambient(view.member("ambient"))
                {
                    let w = work(c);
                    if !w.background.contains(&h) && w.background.len() < MAX_TASKS {
                        w.background.push(h);
                    }
                }
            }
            _ => return false,
        }
        let now = c.work().is_some_and(|w| !w.background.is_empty());
        self.side.set(Side::Background, now);
        if !now {
            free_idle_work(c);
        }
        before && !now
    }
}

/// Whether a line is the work of a background task rather than of the session's own turn: a
/// subagent's line (a `parent_tool_use_id`), or a task's lifecycle line (`system/task_*`,
/// `system/background_tasks_changed`).
pub(crate) fn is_task_line(view: &LineView<'_>) -> bool {
    if view.parent_tool_use_id().is_some() {
        return true;
    }
    view.kind().as_deref() == Some("system")
        && view
            .subtype()
            .is_some_and(|s| s.starts_with("task_") || s == "background_tasks_changed")
}

//! Background tasks: which are outstanding (subagents, shells and monitors run in the
//! background; after a `result` the session is still working, not waiting), and each one's
//! own clock: its last sign of life, never its start, so a long task that works is never cut.
//!
//! A task's signs of life are its own lines: its `system/task_*` lines (`task_started`,
//! `task_progress`, a `task_updated` that does not end it) and the lines it prints (those
//! with its `agent_id`, or with the `parent_tool_use_id` of the call that started it). A
//! monitor (the `Monitor` tool's background shell) prints nothing of its own while it
//! watches: its declared expiry (`timeoutMs`) counts as a sign of life.

use super::{id_hash, Cold, Session, Side, NEVER};
use crate::event::TaskNote;
use crate::view::{Field, LineView};

/// At most this many background tasks are remembered per session (a hostile stream cannot
/// grow a session without bound; extra ids are ignored).
const MAX_TASKS: usize = 64;

/// The longest description or type kept for a task's receipt, in bytes.
const MAX_LABEL: usize = 200;

/// One background task outstanding.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    /// [`id_hash`] of its `task_id`.
    pub hash: u64,
    /// Its `task_id`.
    pub id: Box<str>,
    /// [`id_hash`] of the `tool_use_id` of the call that started (or continued) it, or 0.
    pub tool_use: u64,
    /// Its `description`, if printed.
    pub description: Option<Box<str>>,
    /// Its `task_type`, if printed.
    pub task_type: Option<Box<str>>,
    /// Its last sign of life as its deadline counts it (moved by pauses, as the clocks are).
    pub life: u64,
    /// Its last sign of life, real time (what a receipt states).
    pub seen: u64,
    /// A monitor's declared expiry, or 0.
    pub until: u64,
    /// Noticed silent since its last sign of life.
    pub noticed: bool,
}

impl Task {
    /// Where its own deadline counts from: its last sign of life, or a monitor's expiry if
    /// that is later.
    pub(crate) fn anchor(&self) -> u64 {
        self.life.max(self.until)
    }

    /// The task as a receipt states it at `at`.
    pub(crate) fn note(&self, at: u64) -> TaskNote {
        TaskNote {
            task_id: self.id.to_string(),
            description: self.description.as_deref().map(str::to_owned),
            task_type: self.task_type.as_deref().map(str::to_owned),
            silent: std::time::Duration::from_nanos(at.saturating_sub(self.seen)),
            expires_in: (self.until > at).then(|| std::time::Duration::from_nanos(self.until - at)),
        }
    }
}

/// Whether a task status ends the task.
fn ended(status: &str) -> bool {
    matches!(
        status,
        "completed" | "failed" | "killed" | "stopped" | "cancelled"
    )
}

/// A label of at most [`MAX_LABEL`] bytes (cut at a character boundary).
fn label(f: Option<Field<'_>>) -> Option<Box<str>> {
    let s = f?.as_str()?;
    let mut end = s.len().min(MAX_LABEL);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Some(Box::from(&s[..end]))
}

impl Session {
    /// A line that says which background tasks are outstanding (`system/` subtype `subtype`),
    /// at `now`: `background_tasks_changed` holds the whole live set; `task_started` with
    /// `is_backgrounded: true` adds one, `task_updated` adds one moved to the background and
    /// removes one that ended, `task_notification` removes one. Ambient tasks (Claude Code's
    /// own, not the session's work) never count. A task's own line is a sign of its life.
    /// Returns whether the set became empty.
    pub(crate) fn read_background(
        &mut self,
        c: &mut Cold,
        subtype: &str,
        view: &LineView<'_>,
        now: u64,
    ) -> bool {
        let before = self.side.has(Side::Background);
        let ambient = |f: Option<Field<'_>>| f.and_then(|a| a.as_bool()) == Some(true);
        match subtype {
            "background_tasks_changed" => {
                let Some(tasks) = view.member("tasks") else {
                    return false;
                };
                let old = if before {
                    std::mem::take(&mut c.work_or_new().background)
                } else {
                    Vec::new()
                };
                let mut live = Vec::new();
                tasks.for_each_element(|t| {
                    let Some(id) = t.member("task_id").and_then(|f| f.as_str()) else {
                        return;
                    };
                    if ambient(t.member("ambient")) || live.len() >= MAX_TASKS {
                        return;
                    }
                    let h = id_hash(&id);
                    // A task already known keeps its clock; a new one starts it now.
                    let task = match old.iter().find(|k| k.hash == h && *k.id == *id) {
                        Some(known) => known.clone(),
                        None => Task {
                            hash: h,
                            id: Box::from(&*id),
                            tool_use: 0,
                            description: label(t.member("description")),
                            task_type: label(t.member("task_type")),
                            life: now,
                            seen: now,
                            until: 0,
                            noticed: false,
                        },
                    };
                    live.push(task);
                });
                if before || !live.is_empty() {
                    c.work_or_new().background = live;
                }
            }
            "task_started" | "task_updated" | "task_notification" | "task_progress" => {
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
                let known = before
                    && c.work()
                        .is_some_and(|w| w.background.iter().any(|k| k.hash == h && *k.id == *id));
                if gone {
                    if known {
                        c.work_or_new()
                            .background
                            .retain(|k| !(k.hash == h && *k.id == *id));
                    }
                } else if known {
                    let tool_use = view.member("tool_use_id").and_then(|f| f.as_str());
                    if let Some(k) = c
                        .work_or_new()
                        .background
                        .iter_mut()
                        .find(|k| k.hash == h && *k.id == *id)
                    {
                        k.life = now;
                        k.seen = now;
                        k.noticed = false;
                        if let Some(u) = tool_use {
                            k.tool_use = id_hash(&u);
                        }
                        if k.description.is_none() {
                            k.description = label(view.member("description"));
                        }
                    }
                } else if backgrounded.and_then(|b| b.as_bool()) == Some(true)
                    && !ambient(view.member("ambient"))
                {
                    let w = c.work_or_new();
                    if w.background.len() < MAX_TASKS {
                        w.background.push(Task {
                            hash: h,
                            id: Box::from(&*id),
                            tool_use: view
                                .member("tool_use_id")
                                .and_then(|f| f.as_str())
                                .map_or(0, |u| id_hash(&u)),
                            description: label(view.member("description")),
                            task_type: label(view.member("task_type")),
                            life: now,
                            seen: now,
                            until: 0,
                            noticed: false,
                        });
                    }
                }
            }
            _ => return false,
        }
        let now_outstanding = c.work().is_some_and(|w| !w.background.is_empty());
        self.side.set(Side::Background, now_outstanding);
        if !now_outstanding {
            c.free_idle_work();
        }
        before && !now_outstanding
    }

    /// A line printed by a task (a subagent's, found by its `agent_id` or its
    /// `parent_tool_use_id`) at `now`: a sign of that task's life. Only while tasks are
    /// outstanding.
    pub(crate) fn note_task_line(&mut self, c: &mut Cold, view: &LineView<'_>, now: u64) {
        let Some(parent) = view.parent_tool_use_id() else {
            return;
        };
        let Some(w) = c.work_mut() else { return };
        let agent = view.member("agent_id").and_then(|f| f.as_str());
        let by_agent = agent.as_ref().map(|a| (id_hash(a), a));
        let parent = id_hash(&parent);
        for k in &mut w.background {
            let mine = match &by_agent {
                Some((h, a)) if k.hash == *h && *k.id == **a => true,
                _ => k.tool_use == parent && parent != 0,
            };
            if mine {
                k.life = now;
                k.seen = now;
                k.noticed = false;
            }
        }
    }

    /// A monitor's declared expiry: the task its call (`tool_use` hash) started watches until
    /// `until`.
    pub(crate) fn note_task_expiry(&mut self, c: &mut Cold, tool_use: u64, until: u64) {
        if !self.side.has(Side::Background) {
            return;
        }
        if let Some(k) = c
            .work_mut()
            .and_then(|w| w.background.iter_mut().find(|k| k.tool_use == tool_use))
        {
            k.until = k.until.max(until);
        }
    }

    /// Mark the tasks whose own deadline (`silence` after their anchor) is at or before `at`
    /// noticed, and return them as noticed.
    pub(crate) fn notice_silent_tasks(
        &mut self,
        c: &mut Cold,
        at: u64,
        silence: u64,
    ) -> Vec<TaskNote> {
        let Some(w) = c.work_mut().filter(|_| self.side.has(Side::Background)) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for k in w.background.iter_mut().filter(|k| !k.noticed) {
            if k.anchor().saturating_add(silence) <= at {
                k.noticed = true;
                out.push(k.note(at));
            }
        }
        out
    }

    /// The outstanding tasks as a receipt states them at `at`, the one silent longest first.
    pub(crate) fn task_notes(&self, c: &Cold, at: u64) -> Vec<TaskNote> {
        if !self.side.has(Side::Background) {
            return Vec::new();
        }
        let mut notes: Vec<TaskNote> = c
            .work()
            .map(|w| w.background.iter().map(|k| k.note(at)).collect())
            .unwrap_or_default();
        notes.sort_by_key(|n| std::cmp::Reverse(n.silent));
        notes
    }

    /// The anchors the deadlines read: (latest, earliest not yet noticed or [`NEVER`]).
    pub(crate) fn task_anchors(&self, c: &Cold) -> Option<(u64, u64)> {
        if !self.side.has(Side::Background) {
            return None;
        }
        let w = c.work()?;
        let latest = w.background.iter().map(Task::anchor).max()?;
        let unnoticed = w
            .background
            .iter()
            .filter(|k| !k.noticed)
            .map(Task::anchor)
            .min()
            .unwrap_or(NEVER);
        Some((latest, unnoticed))
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

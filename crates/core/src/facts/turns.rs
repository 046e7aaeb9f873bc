//! Two counts a host pairs its messages by: the turns it asked for and the `result`s that
//! came ([`Turns`]), and the tasks that started and ended ([`TaskCounts`]).

use crate::view::LineView;

/// The host's messages and the session's top-level `result`s: a host that pairs one result
/// with each of its messages (the Agent SDKs' streaming-input mode does) reads a result no
/// message asked for as the answer to its next one. Such a result is *unsolicited*: Claude
/// Code took a turn by itself (a declared wakeup or cron job, a monitor's event, a background
/// task's notification, a Stop hook).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Turns {
    /// The host's top-level `user` messages (a session without host input: its prompt, one).
    pub messages: u32,
    /// Top-level `result` lines.
    pub results: u32,
    /// Results that came when every message already had its result.
    pub unsolicited: u32,
}

impl Turns {
    /// A host message.
    pub(crate) fn message(&mut self) {
        self.messages = self.messages.saturating_add(1);
    }

    /// A top-level `result`: whether no message asked for it.
    pub(crate) fn result(&mut self) -> bool {
        let unsolicited = self.results >= self.messages;
        self.results = self.results.saturating_add(1);
        if unsolicited {
            self.unsolicited = self.unsolicited.saturating_add(1);
        }
        unsolicited
    }
}

/// At most this many task runs are followed at once (a hostile stream cannot grow the count
/// without bound; runs beyond it are counted as started only).
const MAX_OPEN: usize = 256;

/// The session's tasks (subagents, background shells, monitors, in the foreground or the
/// background), counted by run: a `system/task_started` starts one, its first ending line (a
/// `task_updated` to `completed`, `failed`, `killed`, `stopped` or `cancelled`, or its
/// `task_notification`) ends it. A run started and never ended is a lost notification, or a
/// task still running when the session ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskCounts {
    started: u32,
    ended: u32,
    /// (task id, run id) of the runs started and not yet ended.
    open: Vec<(String, String)>,
}

impl TaskCounts {
    pub(crate) fn observe(&mut self, subtype: &str, view: &LineView<'_>) {
        let Some(id) = view.task_id() else { return };
        let run = view.run_id().map(|r| r.into_owned()).unwrap_or_default();
        let at = self
            .open
            .iter()
            .position(|(i, r)| *i == *id && (r.is_empty() || run.is_empty() || *r == run));
        match subtype {
            "task_started" => {
                self.started = self.started.saturating_add(1);
                if at.is_none() && self.open.len() < MAX_OPEN {
                    self.open.push((id.into_owned(), run));
                }
            }
            "task_notification" | "task_updated" => {
                let ends = subtype == "task_notification"
                    || view.task_status().as_deref().is_some_and(|s| {
                        matches!(
                            s,
                            "completed" | "failed" | "killed" | "stopped" | "cancelled"
                        )
                    });
                if let (true, Some(i)) = (ends, at) {
                    self.open.swap_remove(i);
                    self.ended = self.ended.saturating_add(1);
                }
            }
            _ => {}
        }
    }

    /// Task runs started (`task_started` lines).
    pub fn started(&self) -> u32 {
        self.started
    }

    /// Task runs whose end was seen.
    pub fn ended(&self) -> u32 {
        self.ended
    }

    /// The task ids of the runs started and not ended (in start order, at most 256 followed).
    pub fn open(&self) -> impl Iterator<Item = &str> {
        self.open.iter().map(|(i, _)| i.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(t: &mut TaskCounts, line: &str) {
        let v = LineView::parse_str(line).unwrap();
        t.observe(&v.subtype().unwrap(), &v);
    }

    #[test]
    fn a_result_beyond_the_messages_is_unsolicited() {
        let mut t = Turns::default();
        t.message();
        assert!(!t.result());
        assert!(t.result(), "a second result for one message");
        t.message();
        // The host's second message: its answer was given ahead (the unsolicited one is not
        // taken back), so this one is unsolicited too by count.
        assert!(t.result());
        assert_eq!((t.messages, t.results, t.unsolicited), (2, 3, 2));
    }

    #[test]
    fn runs_are_counted_once_each_and_open_ones_named() {
        let mut t = TaskCounts::default();
        feed(
            &mut t,
            r#"{"type":"system","subtype":"task_started","task_id":"a","run_id":"r1"}"#,
        );
        feed(
            &mut t,
            r#"{"type":"system","subtype":"task_started","task_id":"b","run_id":"r2"}"#,
        );
        feed(
            &mut t,
            r#"{"type":"system","subtype":"task_updated","task_id":"a","run_id":"r1","patch":{"status":"completed"}}"#,
        );
        // The notification after the update ends nothing more.
        feed(
            &mut t,
            r#"{"type":"system","subtype":"task_notification","task_id":"a","run_id":"r1","status":"completed"}"#,
        );
        assert_eq!((t.started(), t.ended()), (2, 1));
        assert_eq!(t.open().collect::<Vec<_>>(), ["b"]);
        // A continuation of `a` is a new run.
        feed(
            &mut t,
            r#"{"type":"system","subtype":"task_started","task_id":"a","run_id":"r3"}"#,
        );
        feed(
            &mut t,
            r#"{"type":"system","subtype":"task_notification","task_id":"a","run_id":"r3","status":"failed"}"#,
        );
        assert_eq!((t.started(), t.ended()), (3, 2));
    }
}

//! The subagents of a session and their failures, from its `system/task_*` lines.

use serde_json::{json, Value};

use crate::view::LineView;

/// One subagent failure seen on stdout (`system/task_updated` with `status: "failed"`, or a
/// failed `task_notification`): one per run of an agent, so a continued agent that fails again
/// counts twice.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubagentFailure {
    /// The agent id (`task_id`).
    pub agent_id: String,
    /// Its type (`subagent_type` of its `task_started`).
    pub agent_type: Option<String>,
    /// The error (`patch.error`), e.g. `… (error type max_output_tokens)`.
    pub error: Option<String>,
    /// Whether a later run of the same agent (a `SendMessage` continuation) completed.
    pub recovered: bool,
}

/// The subagents of a run, from the `system/task_*` lines. Tasks that are not agents (no
/// `subagent_type`, e.g. background shells) are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subagents {
    /// Agent id → type, for every agent started.
    types: Vec<(String, Option<String>)>,
    /// (agent id, run id) of the failed runs already counted.
    failed_runs: Vec<(String, String)>,
    /// The failures, in order.
    pub failures: Vec<SubagentFailure>,
}

impl Subagents {
    pub(crate) fn observe(&mut self, subtype: &str, view: &LineView<'_>) {
        let Some(id) = view.task_id() else { return };
        match subtype {
            "task_started" => {
                if let Some(t) = view.subagent_type() {
                    if !self.types.iter().any(|(a, _)| *a == *id) {
                        self.types.push((id.into_owned(), Some(t.into_owned())));
                    }
                }
            }
            _ => {
                let Some((_, agent_type)) = self.types.iter().find(|(a, _)| *a == *id) else {
                    return;
                };
                let agent_type = agent_type.clone();
                match view.task_status().as_deref() {
                    Some("failed") => {
                        let run = view.run_id().map(|r| r.into_owned()).unwrap_or_default();
                        let key = (id.to_string(), run);
                        if let Some(i) = self.failed_runs.iter().position(|k| *k == key) {
                            // The notification after the update: keep the error we have.
                            let f = &mut self.failures[i];
                            if f.error.is_none() {
                                f.error = view.task_error().map(Into::into);
                            }
                            return;
                        }
                        self.failed_runs.push(key);
                        self.failures.push(SubagentFailure {
                            agent_id: id.into_owned(),
                            agent_type,
                            error: view.task_error().map(Into::into),
                            recovered: false,
                        });
                    }
                    Some("completed") => {
                        for f in self.failures.iter_mut().filter(|f| *f.agent_id == *id) {
                            f.recovered = true;
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Failures whose agent never completed afterwards.
    pub fn unrecovered(&self) -> impl Iterator<Item = &SubagentFailure> {
        self.failures.iter().filter(|f| !f.recovered)
    }

    /// The failures as JSON: `[{agent_id, agent_type, error, recovered}]`.
    pub fn failures_json(&self) -> Value {
        Value::Array(
            self.failures
                .iter()
                .map(|f| {
                    json!({
                        "agent_id": f.agent_id,
                        "agent_type": f.agent_type,
                        "error": f.error,
                        "recovered": f.recovered,
                    })
                })
                .collect(),
        )
    }

    /// One line per failure for stderr, e.g. `subagent a02f… (general-purpose) failed:
    /// … (error type max_output_tokens); the session went on without it`.
    pub fn report_lines(&self) -> Vec<String> {
        self.failures
            .iter()
            .map(|f| {
                format!(
                    "subagent {} ({}) failed: {}; {}",
                    f.agent_id,
                    f.agent_type.as_deref().unwrap_or("unknown type"),
                    f.error.as_deref().unwrap_or("no error given"),
                    if f.recovered {
                        "a later run of the same agent completed"
                    } else {
                        "its work is unfinished even if the session succeeded"
                    }
                )
            })
            .collect()
    }
}

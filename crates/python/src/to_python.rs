//! What the watchdog hands back to Python: a kill as a tuple with its reason in words, the
//! drained events as tuples, the line counts and the resolved options as `dict`s.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use watchdog_core::config::HumanDuration;
use watchdog_core::{Event, Kill};

use crate::options::limits_dict;
use crate::watchdog_state::Inner;

impl Inner {
    /// A kill as `(kind, reason, at, elapsed, since_progress, since_tool)`, `at` in clock
    /// seconds.
    pub(crate) fn kill_tuple<'py>(
        &self,
        py: Python<'py>,
        k: &Kill,
    ) -> PyResult<Bound<'py, PyTuple>> {
        (
            k.kind.as_str(),
            kill_reason(k),
            self.secs(k.at),
            k.elapsed.as_secs_f64(),
            k.since_progress.as_secs_f64(),
            k.since_tool.as_secs_f64(),
        )
            .into_pyobject(py)
    }

    /// Drain the events: tuples `(name, id, …)`.
    pub(crate) fn events<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for e in std::mem::take(&mut self.pending) {
            let id = e.id().as_u64();
            let item = match &e {
                Event::Killed(k) => {
                    ("killed", id, self.kill_tuple(py, k)?.into_any()).into_pyobject(py)?
                }
                Event::Extended { reason, .. } => (
                    "extended",
                    id,
                    reason.as_str().into_pyobject(py)?.into_any(),
                )
                    .into_pyobject(py)?,
                Event::Stalling {
                    clock, remaining, ..
                } => (
                    "stalling",
                    id,
                    (clock.as_str(), remaining.as_secs_f64())
                        .into_pyobject(py)?
                        .into_any(),
                )
                    .into_pyobject(py)?,
                Event::Settled { .. } => {
                    ("settled", id, py.None().into_bound(py)).into_pyobject(py)?
                }
                Event::Ended { outcome, .. } => {
                    ("ended", id, outcome.as_str().into_pyobject(py)?.into_any())
                        .into_pyobject(py)?
                }
                _ => continue,
            };
            out.append(item)?;
        }
        Ok(out)
    }

    /// Lines observed per kind (all sessions), by the core's kind names.
    pub(crate) fn line_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (kind, n) in watchdog_core::LineKind::ALL
            .iter()
            .zip(self.registry.line_counts())
        {
            if *n > 0 {
                out.set_item(kind.as_str(), *n)?;
            }
        }
        Ok(out)
    }

    /// The resolved options (seconds for durations).
    pub(crate) fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        limits_dict(py, self.registry.limits())
    }
}

/// Why the session was killed, in words.
fn kill_reason(k: &Kill) -> String {
    let d = |d| HumanDuration(d).to_string();
    match k.kind.as_str() {
        "ceiling" => format!("the session reached its ceiling (age {})", d(k.elapsed)),
        "startup" => format!("no output at all since the start ({})", d(k.elapsed)),
        "linger" => format!(
            "a result came, then nothing new for {} and the stream did not end",
            d(k.since_progress)
        ),
        "idle" => format!(
            "no output for {} (no message, no tool in flight)",
            d(k.since_keepalive)
        ),
        // The kinds of the field's hangs name what was waited on (the kill's receipt).
        "task_silent" | "wakeup_missed" | "unanswered" => {
            let o = k.outstanding.as_deref();
            let what = match (k.kind.as_str(), o) {
                ("task_silent", Some(o)) => o
                    .tasks
                    .iter()
                    .map(|t| match &t.description {
                        Some(desc) => format!("{} ({desc:?}) silent {}", t.task_id, d(t.silent)),
                        None => format!("{} silent {}", t.task_id, d(t.silent)),
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                ("wakeup_missed", Some(o)) => o
                    .wakeups
                    .first()
                    .map(|w| {
                        format!(
                            "{} ({}) overdue {}",
                            w.tool.as_str(),
                            w.tool_use_id,
                            d(w.overdue)
                        )
                    })
                    .unwrap_or_default(),
                (_, Some(o)) => o
                    .requests
                    .first()
                    .map(|r| format!("{} request {}", r.subtype, r.request_id))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            match k.kind.as_str() {
                "task_silent" => format!(
                    "no output for {} while background tasks were outstanding, none with a sign \
                     of life: {what}",
                    d(k.since_keepalive)
                ),
                "wakeup_missed" => format!("a declared wakeup never fired: {what}"),
                _ => format!("the host's control request was never answered: {what}"),
            }
        }
        _ => format!(
            "no progress for {} (keep-alives or a tool in flight only)",
            d(k.since_progress)
        ),
    }
}

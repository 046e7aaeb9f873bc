//! The gauges of a run, read by the SDK at each collection (its own thread, every
//! `OTEL_METRIC_EXPORT_INTERVAL`) from a snapshot the run loop keeps current: the MCP calls
//! outstanding and the age of the oldest, per tool (from the core's `Event::McpCalls`), and
//! the rate-limit utilization per window (the policy's readings, copied when a
//! `rate_limit_event` line or a rate-limit event came). The snapshot's lock is never taken on
//! the line path: only by the run loop, when one of those changes, and by the collection.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use opentelemetry::metrics::{AsyncInstrument, Meter, ObservableGauge};
use opentelemetry::KeyValue;
use watchdog_core::facts::OutstandingMcp;

use super::instruments::{observable_gauge, tool_attrs, SOURCE};

/// What the gauges show now.
#[derive(Debug, Default)]
pub(super) struct Snapshot {
    /// The run's `session.id` (empty until known).
    session: String,
    /// The MCP calls outstanding.
    mcp: Vec<OutstandingMcp>,
    /// Every MCP tool seen outstanding in this run (shown as 0 once its calls are done, so a
    /// dashboard does not keep the last count).
    tools: Vec<String>,
    /// The utilization per rate-limit window.
    rate: Vec<(String, f64)>,
}

/// The gauges' shared snapshot; cheap to clone.
#[derive(Debug, Clone, Default)]
pub(super) struct Gauges(Arc<Mutex<Snapshot>>);

impl Gauges {
    fn lock(&self) -> std::sync::MutexGuard<'_, Snapshot> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new run under `session`: no MCP call outstanding, no reading yet.
    pub(super) fn start_run(&self, session: &str) {
        let mut g = self.lock();
        *g = Snapshot {
            session: session.to_owned(),
            ..Snapshot::default()
        };
    }

    /// The run's session id became known.
    pub(super) fn set_session(&self, session: &str) {
        self.lock().session = session.to_owned();
    }

    /// The MCP calls outstanding now.
    pub(super) fn set_mcp(&self, calls: &[OutstandingMcp]) {
        let mut g = self.lock();
        for c in calls {
            if !g.tools.contains(&c.tool) {
                g.tools.push(c.tool.clone());
            }
        }
        g.mcp = calls.to_vec();
    }

    /// The utilization per window now.
    pub(super) fn set_rate(&self, rate: Vec<(String, f64)>) {
        self.lock().rate = rate;
    }

    /// Register the gauges on `meter`; the handles keep them registered.
    pub(super) fn register(&self, meter: &Meter) -> Vec<ObservableGauge<f64>> {
        let (a, b, c) = (self.clone(), self.clone(), self.clone());
        vec![
            observable_gauge(meter, "agent_watchdog.mcp.call.outstanding", move |o| {
                a.observe_mcp(o, |calls, _| calls.len() as f64);
            }),
            observable_gauge(meter, "agent_watchdog.mcp.call.oldest_age", move |o| {
                let now = Instant::now();
                b.observe_mcp(o, |calls, _| {
                    calls
                        .iter()
                        .map(|c| now.saturating_duration_since(c.since).as_secs_f64())
                        .fold(0.0, f64::max)
                });
            }),
            observable_gauge(meter, "agent_watchdog.rate_limit.utilization", move |o| {
                let g = c.lock();
                for (window, u) in &g.rate {
                    o.observe(
                        *u,
                        &[
                            KeyValue::new("session.id", g.session.clone()),
                            KeyValue::new(SOURCE, "run"),
                            KeyValue::new("window", window.clone()),
                        ],
                    );
                }
            }),
        ]
    }

    /// One point per MCP tool seen in the run: `value` of its outstanding calls (none: 0).
    fn observe_mcp(
        &self,
        o: &dyn AsyncInstrument<f64>,
        value: impl Fn(&[&OutstandingMcp], &str) -> f64,
    ) {
        let g = self.lock();
        for tool in &g.tools {
            let calls: Vec<&OutstandingMcp> = g.mcp.iter().filter(|c| c.tool == *tool).collect();
            let mut a = vec![
                KeyValue::new("session.id", g.session.clone()),
                KeyValue::new(SOURCE, "run"),
            ];
            a.extend(tool_attrs(tool));
            o.observe(value(&calls, tool), &a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_tool_whose_calls_are_done_shows_zero_and_a_new_run_starts_afresh() {
        let g = Gauges::default();
        g.start_run("s1");
        let t = Instant::now();
        let call = |tool: &str, since| OutstandingMcp {
            tool: tool.into(),
            since,
        };
        g.set_mcp(&[
            call("mcp__db__query", t),
            call("mcp__db__query", t + Duration::from_secs(5)),
            call("mcp__web__get", t),
        ]);
        let counts = |g: &Gauges| {
            let s = g.lock();
            s.tools
                .iter()
                .map(|t| (t.clone(), s.mcp.iter().filter(|c| c.tool == *t).count()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            counts(&g),
            [("mcp__db__query".into(), 2), ("mcp__web__get".into(), 1)]
        );
        g.set_mcp(&[call("mcp__web__get", t)]);
        assert_eq!(
            counts(&g),
            [("mcp__db__query".into(), 0), ("mcp__web__get".into(), 1)]
        );
        g.start_run("s2");
        assert_eq!(counts(&g), []);
        assert_eq!(g.lock().session, "s2");
    }
}

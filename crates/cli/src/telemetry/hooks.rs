//! The calls the run loop makes into the telemetry, in every build: with the cargo feature
//! `telemetry` and the switch on they record (`live`); otherwise each is one branch and does
//! nothing.

use std::time::{Duration, Instant};

use agent_sdk_watchdog::{LineMeta, SupervisorHandle};
use watchdog_core::Event;

use crate::run_report::RunReport;

/// The live recording of an invocation's runs (docs/telemetry.md: what is recorded
/// when).
pub(crate) struct Live {
    #[cfg(feature = "telemetry")]
    pub(super) inner: super::live::Live,
}

impl Live {
    /// Nothing recorded.
    pub(crate) fn off() -> Live {
        Live {
            #[cfg(feature = "telemetry")]
            inner: super::live::Live::off(),
        }
    }

    /// Whether anything is recorded: the run's session then reports its live facts
    /// ([`watchdog_core::SessionConfig::with_live_facts`]).
    pub(crate) fn is_on(&self) -> bool {
        #[cfg(feature = "telemetry")]
        return self.inner.is_on();
        #[cfg(not(feature = "telemetry"))]
        false
    }

    /// A run begins; `session`: its Claude Code session id when known already.
    pub(crate) fn run_started(&mut self, session: Option<&str>) {
        #[cfg(feature = "telemetry")]
        self.inner.run_started(session);
        #[cfg(not(feature = "telemetry"))]
        let _ = session;
    }

    /// Stdout lines read together `since_spawn` after the run spawned, as the policy classed
    /// them.
    pub(crate) fn stdout(
        &mut self,
        since_spawn: Duration,
        lines: &[LineMeta],
        handle: &SupervisorHandle,
    ) {
        #[cfg(feature = "telemetry")]
        self.inner.stdout(since_spawn, lines, handle);
        #[cfg(not(feature = "telemetry"))]
        let _ = (since_spawn, lines, handle);
    }

    /// A policy event the run loop handles at `now`; true for the events only telemetry reads
    /// (the run loop then leaves them alone).
    pub(crate) fn event(&mut self, ev: &Event, now: Instant, handle: &SupervisorHandle) -> bool {
        #[cfg(feature = "telemetry")]
        self.inner.event(ev, now, handle);
        #[cfg(not(feature = "telemetry"))]
        let _ = (now, handle);
        // The live facts, in every build.
        matches!(
            ev,
            Event::QuietSpells { .. } | Event::McpCalls { .. } | Event::SessionIdentified { .. }
        )
    }

    /// The user's signal `name` was forwarded to the child.
    pub(crate) fn signal_forwarded(&mut self, name: &'static str) {
        #[cfg(feature = "telemetry")]
        self.inner.signal_forwarded(name);
        #[cfg(not(feature = "telemetry"))]
        let _ = name;
    }

    /// The run ended, its ladder too: `run`, before recovery.
    pub(crate) fn run_ended(&mut self, run: &RunReport) {
        #[cfg(feature = "telemetry")]
        self.inner.run_ended(run);
        #[cfg(not(feature = "telemetry"))]
        let _ = run;
    }
}

//! The typed end of one supervised run, as its observers read it: the supervisor's record,
//! who stopped it ([`StoppedBy`], decided once), what `run` measured, and what recovery did
//! ([`RecoveryResult`]). `run` builds it from its finished run; telemetry reads it. The
//! summary is this run's JSON rendering, an output only: nothing reads it back.

use std::time::{Duration, Instant};

use watchdog_core::recovery::Trigger;
use watchdog_core::RunRecord;

use crate::exit_code::StoppedBy;

/// One finished run, as its observers read it. (Telemetry is its reader: a build without the
/// `telemetry` feature builds it and reads none of it.)
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "telemetry"), allow(dead_code))]
pub(crate) struct RunReport<'a> {
    /// The supervisor's record of the run: its outcome, its kill, its session, its lines.
    pub(crate) record: &'a RunRecord,
    /// Who stopped it.
    pub(crate) stopped: StoppedBy<'a>,
    /// The exit code reported for it: the invocation's for the first run (recovery may have
    /// changed it), its own for a continuation.
    pub(crate) exit_code: i32,
    /// From spawn to the end.
    pub(crate) duration: Duration,
    /// The spawn instant: a kill's `at` counts from it.
    pub(crate) start: Instant,
    /// How long after its deadline the kill reached `run`, if one did.
    pub(crate) kill_late: Option<Duration>,
    /// What recovery did after this run (the invocation's first run only).
    pub(crate) recovery: Option<&'a RecoveryResult>,
}

#[cfg_attr(not(feature = "telemetry"), allow(dead_code))]
impl RunReport<'_> {
    /// The Claude Code session id, when the run printed one.
    pub(crate) fn session_id(&self) -> Option<&str> {
        self.record.session_id.as_ref().map(|s| s.as_str())
    }
}

/// What recovery did after a run. The trigger is known once the marker is claimed (a
/// continuation about to run); a notice or an error before that has none here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecoveryResult {
    /// Nothing to decide, or nothing done: no trigger, a trigger that is off, a skip, a notice
    /// given before.
    NotNeeded,
    /// The single notice was given instead of a continuation.
    Notice(Option<Trigger>),
    /// Recovery could not go on: no ledger, a marker that could not be claimed, a command
    /// line without its prompt, a continuation that could not start.
    Error(Option<Trigger>),
    /// The marker was claimed but nothing was continued: the user aborted the wait.
    NotContinued(Trigger),
    /// The session was continued once.
    Continued(Trigger),
}

#[cfg_attr(not(feature = "telemetry"), allow(dead_code))]
impl RecoveryResult {
    /// `(trigger, result)` as telemetry names them (`unknown` for a trigger not known here);
    /// `None` when recovery had nothing to decide.
    pub(crate) fn names(&self) -> Option<(&'static str, &'static str)> {
        let name = |t: &Option<Trigger>| (*t).map_or("unknown", Trigger::as_str);
        match self {
            RecoveryResult::NotNeeded => None,
            RecoveryResult::Notice(t) => Some((name(t), "notice")),
            RecoveryResult::Error(t) => Some((name(t), "error")),
            RecoveryResult::NotContinued(t) => Some((t.as_str(), "not_continued")),
            RecoveryResult::Continued(t) => Some((t.as_str(), "continued")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_results_are_named_only_when_recovery_had_something_to_decide() {
        let named = |r: RecoveryResult| r.names().map(|(t, r)| format!("{t}/{r}"));
        assert_eq!(named(RecoveryResult::NotNeeded), None);
        assert_eq!(
            named(RecoveryResult::Continued(Trigger::OutputLimit)).as_deref(),
            Some("output_limit/continued")
        );
        assert_eq!(
            named(RecoveryResult::NotContinued(Trigger::RateLimitWait)).as_deref(),
            Some("rate_limit_wait/not_continued")
        );
        assert_eq!(
            named(RecoveryResult::Notice(None)).as_deref(),
            Some("unknown/notice")
        );
        assert_eq!(
            named(RecoveryResult::Error(Some(Trigger::AfterKill))).as_deref(),
            Some("after_kill/error")
        );
    }
}

//! `evaluateWatchdog(timeline, now, utilization, limits)`: the reference's pure verdict of one
//! timeline ([`crate::reference::verdict`]), from the host's numbers.

use std::time::Duration;

pub use crate::reference::Verdict;
use crate::reference::{self, Timeline as CoreTimeline};
#[cfg(test)]
use watchdog_core::{ExtendReason, KillKind};

use crate::clock;
use crate::watchdog::{limits, Options};

/// One query's clocks, host ms (`NaN` where absent).
#[derive(Debug, Clone, Copy)]
pub struct Timeline {
    /// When it was registered.
    pub started_at: f64,
    /// The last tool boundary.
    pub last_tool_at: f64,
    /// The last sign of life of any kind.
    pub last_activity_at: f64,
    /// A write tool completed (the reference: `firstWriteAt` is not `null`).
    pub written: bool,
    /// The hard ceiling (`NaN`, infinite: none).
    pub hard_ceiling_ms: f64,
    /// A `result` came and no work since.
    pub settled: bool,
    /// Ours: when it settled (`NaN`: at the last instant of the timeline).
    pub settled_at: f64,
    /// Ours: the last work.
    pub last_work_at: f64,
    /// Ours: a message was seen (the startup rule applies until then). A settled timeline
    /// has seen one (its result), whatever this says.
    pub seen: bool,
}

/// The verdict of `t` at `now_ms` with `utilization` under `o` (values the watchdog would
/// refuse are taken at the nearest it accepts: a patience of zero or less is the shortest, a
/// factor below 1 is 1, a threshold is clamped to [0, 1]).
pub fn evaluate(t: &Timeline, now_ms: f64, utilization: Option<f64>, o: &Options) -> Verdict {
    let o = Options {
        idle_ms: if o.idle_ms > 0.0 { o.idle_ms } else { 1e-6 },
        extend_factor: if o.extend_factor >= 1.0 {
            o.extend_factor
        } else {
            1.0
        },
        high_utilization: o.high_utilization.clamp(0.0, 1.0),
        ..*o
    };
    let Ok(limits) = limits(&o, &["Write"]) else {
        return Verdict::Ok; // only a NaN patience or factor is left: nothing ever falls due
    };
    let at = |ms: f64, or: f64| clock::instant(if ms.is_nan() { or } else { ms });
    let started = clock::instant(t.started_at);
    let last_tool = at(t.last_tool_at, t.started_at);
    let last_activity = at(t.last_activity_at, t.last_tool_at);
    let last = [t.last_tool_at, t.last_activity_at]
        .into_iter()
        .filter(|x| !x.is_nan())
        .fold(t.started_at, f64::max);
    let last_work = at(t.last_work_at, last);
    let ceiling = if t.hard_ceiling_ms.is_nan() || t.hard_ceiling_ms == f64::INFINITY {
        None
    } else {
        Some(clock::duration(t.hard_ceiling_ms).unwrap_or(Duration::ZERO))
    };
    let timeline = CoreTimeline {
        started,
        ceiling,
        last_tool,
        last_activity,
        last_work,
        written: t.written,
        settled: t.settled.then(|| at(t.settled_at, last)),
        seen: t.seen,
    };
    reference::verdict(&limits, &timeline, clock::instant(now_ms), utilization)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watchdog::options;

    const MIN: f64 = 60_000.0;
    const T0: f64 = 1e9;

    fn lane() -> Timeline {
        Timeline {
            started_at: T0,
            last_tool_at: T0,
            last_activity_at: T0,
            written: false,
            hard_ceiling_ms: 70.0 * MIN,
            settled: false,
            settled_at: f64::NAN,
            last_work_at: T0,
            seen: true,
        }
    }

    fn written() -> Timeline {
        Timeline {
            written: true,
            ..lane()
        }
    }

    #[test]
    fn the_reference_policy_cases() {
        let o = options();
        let at = |m: f64| T0 + m * MIN;
        let v = |t: &Timeline, m: f64, u: Option<f64>| evaluate(t, at(m), u, &o);
        assert_eq!(v(&written(), 8.8, Some(0.4)), Verdict::Ok);
        assert_eq!(
            v(&written(), 11.0, Some(0.4)),
            Verdict::Kill(KillKind::Idle)
        );
        assert_eq!(
            v(&written(), 11.0, Some(0.92)),
            Verdict::Extend(ExtendReason::HighUtilization)
        );
        assert_eq!(
            v(&written(), 21.0, Some(0.92)),
            Verdict::Kill(KillKind::Idle)
        );
        assert_eq!(
            v(&lane(), 15.0, Some(0.3)),
            Verdict::Extend(ExtendReason::PreWrite)
        );
        assert_eq!(v(&lane(), 21.0, None), Verdict::Kill(KillKind::Idle));
        let busy = Timeline {
            last_activity_at: at(71.0) - 5_000.0,
            ..written()
        };
        assert_eq!(v(&busy, 71.0, None), Verdict::Kill(KillKind::Ceiling));
        let settled = Timeline {
            settled: true,
            ..written()
        };
        assert_eq!(v(&settled, 25.0, None), Verdict::Ok);
    }

    #[test]
    fn boundaries_are_inclusive() {
        let o = options();
        assert_eq!(
            evaluate(&written(), T0 + 10.0 * MIN, None, &o),
            Verdict::Kill(KillKind::Idle)
        );
        assert_eq!(
            evaluate(&written(), T0 + 10.0 * MIN - 1.0, None, &o),
            Verdict::Ok
        );
        let one = Options {
            extend_factor: 1.0,
            ..o
        };
        assert_eq!(
            evaluate(&lane(), T0 + 10.0 * MIN, None, &one),
            Verdict::Kill(KillKind::Idle)
        );
        let nan = Timeline {
            hard_ceiling_ms: f64::NAN,
            settled: true,
            ..lane()
        };
        assert_eq!(evaluate(&nan, 1e15, None, &o), Verdict::Ok);
    }

    #[test]
    fn a_tool_boundary_before_registration_counts_from_where_it_was() {
        // The reference reads `now - max(lastToolAt, lastActivityAt)` whatever `startedAt` is.
        let early = Timeline {
            last_tool_at: T0 - 5.0 * MIN,
            last_activity_at: T0 - 5.0 * MIN,
            last_work_at: T0 - 5.0 * MIN,
            ..written()
        };
        assert_eq!(
            evaluate(&early, T0 + 5.0 * MIN, None, &options()),
            Verdict::Kill(KillKind::Idle)
        );
    }
}

//! The in-process idle policy of the npm package's `createWatchdog()` (the TypeScript
//! `agent-sdk-watchdog` 0.2.0 API), with exact deadlines.
//!
//! This is a second, deliberately small policy beside the [`Registry`](crate::Registry): the
//! Node API keeps the reference package's semantics (what counts as activity, the settled
//! rule, the inclusive boundaries), so a host that moves from the reference to our package
//! sees the same verdicts. What it adds is [`next_check`]: the instant the verdict of a
//! timeline can next change, so the host arms its timer there instead of polling on a tick.
//!
//! Times are milliseconds as `f64` (JavaScript numbers), on whatever clock the host uses.
//!
//! # Evaluation order ([`evaluate`])
//!
//! 1. `now − started_at ≥ hard_ceiling_ms`: kill [`IdleKill::HardCeiling`] (wins over
//!    everything, settled or busy);
//! 2. settled: ok;
//! 3. `idle = now − max(last_tool_at, last_activity_at)`; patience is
//!    `idle_ms × extend_factor` while utilization ≥ `high_utilization` or before the first
//!    write, else `idle_ms`;
//! 4. `idle ≥ patience`: kill [`IdleKill::Idle`]; else `idle ≥ idle_ms`: extend
//!    (`high_utilization` wins over `pre_write`); else ok.
//!
//! # The slab ([`evaluate_slab`])
//!
//! The Node addon keeps every registered timeline in one `Float64Array`, [`slab::STRIDE`]
//! numbers per query, so a pass over 100,000 queries is one call with no object conversion.
//! The field offsets are the constants of [`slab`]; `first_write_at` is `NaN` for none.

use crate::event::ExtendReason;

/// The limits the idle policy reads. [`Default`] is the reference package's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleLimits {
    /// Base idle patience, ms (default 600,000).
    pub idle_ms: f64,
    /// How many times `idle_ms` a query gets while an extension holds (default 2).
    pub extend_factor: f64,
    /// Utilization (0 to 1) at or above which patience is extended (default 0.9).
    pub high_utilization: f64,
}

impl Default for IdleLimits {
    fn default() -> Self {
        IdleLimits {
            idle_ms: 600_000.0,
            extend_factor: 2.0,
            high_utilization: 0.9,
        }
    }
}

/// One supervised query's clocks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeline {
    /// When it was registered.
    pub started_at: f64,
    /// The last tool boundary (registration counts as one).
    pub last_tool_at: f64,
    /// The last activity of any kind; `None` means `last_tool_at`.
    pub last_activity_at: Option<f64>,
    /// The first completed write tool, if any.
    pub first_write_at: Option<f64>,
    /// The cap on total age (never validated: `NaN` or infinity never kill).
    pub hard_ceiling_ms: f64,
    /// A `result` came and no new work since: only the hard ceiling applies.
    pub settled: bool,
}

/// Why the idle policy kills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdleKill {
    /// No activity for the patience.
    Idle,
    /// Total age reached `hard_ceiling_ms`.
    HardCeiling,
}

impl IdleKill {
    /// The reference's names: `watchdog_idle`, `hard_ceiling`.
    pub fn as_str(self) -> &'static str {
        match self {
            IdleKill::Idle => "watchdog_idle",
            IdleKill::HardCeiling => "hard_ceiling",
        }
    }
}

/// What [`evaluate`] decides for one timeline at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Nothing to do.
    Ok,
    /// Past the base patience, but an extension holds.
    Extend(ExtendReason),
    /// Kill now.
    Kill(IdleKill),
}

impl Verdict {
    /// The verdict as the small integer the Node addon hands to JavaScript: 0 ok, 1 extend
    /// `pre_write`, 2 extend `high_utilization`, 3 kill `watchdog_idle`, 4 kill `hard_ceiling`.
    pub fn code(self) -> i32 {
        match self {
            Verdict::Ok => 0,
            Verdict::Extend(ExtendReason::PreWrite) => 1,
            Verdict::Extend(ExtendReason::HighUtilization) => 2,
            Verdict::Kill(IdleKill::Idle) => 3,
            Verdict::Kill(IdleKill::HardCeiling) => 4,
        }
    }
}

fn last_activity(t: &Timeline) -> f64 {
    t.last_tool_at
        .max(t.last_activity_at.unwrap_or(t.last_tool_at))
}

fn high(utilization: Option<f64>, limits: &IdleLimits) -> bool {
    utilization.is_some_and(|u| u >= limits.high_utilization)
}

fn patience(t: &Timeline, utilization: Option<f64>, limits: &IdleLimits) -> f64 {
    if high(utilization, limits) || t.first_write_at.is_none() {
        limits.idle_ms * limits.extend_factor
    } else {
        limits.idle_ms
    }
}

/// The verdict for `t` at `now` with `utilization` (see the module's evaluation order).
pub fn evaluate(t: &Timeline, now: f64, utilization: Option<f64>, limits: &IdleLimits) -> Verdict {
    if now - t.started_at >= t.hard_ceiling_ms {
        return Verdict::Kill(IdleKill::HardCeiling);
    }
    if t.settled {
        return Verdict::Ok;
    }
    let idle = now - last_activity(t);
    if idle >= patience(t, utilization, limits) {
        return Verdict::Kill(IdleKill::Idle);
    }
    if idle >= limits.idle_ms {
        let reason = if high(utilization, limits) {
            ExtendReason::HighUtilization
        } else {
            ExtendReason::PreWrite
        };
        return Verdict::Extend(reason);
    }
    Verdict::Ok
}

/// The first instant after `now` at which [`evaluate`] can give a different verdict, if
/// nothing is fed and utilization stays: the base patience (an extension or the kill), the
/// extended patience, or the hard ceiling, whichever comes first. `f64::INFINITY` when no
/// deadline is left (settled with no finite ceiling).
pub fn next_check(t: &Timeline, now: f64, utilization: Option<f64>, limits: &IdleLimits) -> f64 {
    let mut next = f64::INFINITY;
    let ceiling = t.started_at + t.hard_ceiling_ms;
    if ceiling > now {
        next = ceiling;
    }
    if t.settled {
        return next;
    }
    let last = last_activity(t);
    for at in [
        last + limits.idle_ms,
        last + patience(t, utilization, limits),
    ] {
        if at > now && at < next {
            next = at;
        }
    }
    next
}

/// The slab layout: the offsets of one timeline's fields in a row of [`slab::STRIDE`] numbers.
pub mod slab {
    /// Numbers per row.
    pub const STRIDE: usize = 7;
    /// [`Timeline::started_at`](super::Timeline::started_at).
    pub const STARTED_AT: usize = 0;
    /// [`Timeline::last_tool_at`](super::Timeline::last_tool_at).
    pub const LAST_TOOL_AT: usize = 1;
    /// [`Timeline::last_activity_at`](super::Timeline::last_activity_at) (always set).
    pub const LAST_ACTIVITY_AT: usize = 2;
    /// [`Timeline::first_write_at`](super::Timeline::first_write_at); `NaN` for none.
    pub const FIRST_WRITE_AT: usize = 3;
    /// [`Timeline::hard_ceiling_ms`](super::Timeline::hard_ceiling_ms).
    pub const HARD_CEILING_MS: usize = 4;
    /// Bit flags: [`LIVE`], [`SETTLED`], [`KILLED`], [`EXTEND_NOTED`].
    pub const FLAGS: usize = 5;
    /// The host's insertion sequence number (not read here).
    pub const SEQ: usize = 6;
    /// The row holds a registered query.
    pub const LIVE: u32 = 1;
    /// [`Timeline::settled`](super::Timeline::settled).
    pub const SETTLED: u32 = 2;
    /// The query was killed: it is not evaluated again.
    pub const KILLED: u32 = 4;
    /// The host already reported the extension (not read here).
    pub const EXTEND_NOTED: u32 = 8;
    /// The verdict code of a row that was not evaluated (free or killed).
    pub const SKIPPED: i32 = -1;

    /// The timeline in `row` (one [`STRIDE`]-long row).
    pub fn timeline(row: &[f64]) -> super::Timeline {
        let first = row[FIRST_WRITE_AT];
        super::Timeline {
            started_at: row[STARTED_AT],
            last_tool_at: row[LAST_TOOL_AT],
            last_activity_at: Some(row[LAST_ACTIVITY_AT]),
            first_write_at: (!first.is_nan()).then_some(first),
            hard_ceiling_ms: row[HARD_CEILING_MS],
            settled: flags(row) & SETTLED != 0,
        }
    }

    /// The row's flags.
    pub fn flags(row: &[f64]) -> u32 {
        row[FLAGS] as u32
    }
}

/// Evaluates every live, unkilled row of `rows` (a whole number of [`slab::STRIDE`]-long rows)
/// at `now`: writes one verdict code ([`Verdict::code`], or [`slab::SKIPPED`]) per row into
/// `verdicts`, and returns the earliest [`next_check`] of the rows that are not killed by this
/// pass (`f64::INFINITY` for none). Rows past `verdicts.len()` are not read.
pub fn evaluate_slab(
    rows: &[f64],
    now: f64,
    utilization: Option<f64>,
    limits: &IdleLimits,
    verdicts: &mut [i32],
) -> f64 {
    let mut next = f64::INFINITY;
    for (row, verdict) in rows.chunks_exact(slab::STRIDE).zip(verdicts.iter_mut()) {
        let flags = slab::flags(row);
        if flags & slab::LIVE == 0 || flags & slab::KILLED != 0 {
            *verdict = slab::SKIPPED;
            continue;
        }
        let t = slab::timeline(row);
        let v = evaluate(&t, now, utilization, limits);
        *verdict = v.code();
        if !matches!(v, Verdict::Kill(_)) {
            next = next.min(next_check(&t, now, utilization, limits));
        }
    }
    next
}

/// What one SDK message does to a supervised query's clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Nothing.
    None = 0,
    /// A `result`: settle (clocks untouched).
    Settle = 1,
    /// A heartbeat: moves the idle clock, does not un-settle.
    Alive = 2,
    /// Work: un-settles and moves the idle clock.
    Work = 3,
    /// Work when tool heartbeats are on, else nothing (`tool_progress`).
    HeartbeatWork = 4,
}

/// The classification table of the Node API: `(type, subtype, effect)`, where a `None`
/// subtype matches any subtype. A message matching no row has [`Effect::None`]; the rows of a
/// `type` with a subtype are tried before nothing.
pub const OBSERVE_TABLE: &[(&str, Option<&str>, Effect)] = &[
    ("result", None, Effect::Settle),
    ("rate_limit_event", None, Effect::Alive),
    ("stream_event", None, Effect::Work),
    ("system", Some("thinking_tokens"), Effect::Work),
    ("tool_progress", None, Effect::HeartbeatWork),
];

/// The effect of a message with this `type` and `subtype` ([`OBSERVE_TABLE`]).
pub fn observe_effect(kind: &str, subtype: Option<&str>) -> Effect {
    OBSERVE_TABLE
        .iter()
        .find(|(k, s, _)| *k == kind && s.is_none_or(|s| Some(s) == subtype))
        .map_or(Effect::None, |(_, _, e)| *e)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: f64 = 60_000.0;
    const T0: f64 = 1e9;

    fn lane() -> Timeline {
        Timeline {
            started_at: T0,
            last_tool_at: T0,
            last_activity_at: None,
            first_write_at: None,
            hard_ceiling_ms: 70.0 * MIN,
            settled: false,
        }
    }

    fn written() -> Timeline {
        Timeline {
            first_write_at: Some(T0),
            ..lane()
        }
    }

    #[test]
    fn the_reference_policy_cases() {
        let l = IdleLimits::default();
        let at = |m: f64| T0 + m * MIN;
        assert_eq!(evaluate(&written(), at(8.8), Some(0.4), &l), Verdict::Ok);
        assert_eq!(
            evaluate(&written(), at(11.0), Some(0.4), &l),
            Verdict::Kill(IdleKill::Idle)
        );
        assert_eq!(
            evaluate(&written(), at(11.0), Some(0.92), &l),
            Verdict::Extend(ExtendReason::HighUtilization)
        );
        assert_eq!(
            evaluate(&written(), at(21.0), Some(0.92), &l),
            Verdict::Kill(IdleKill::Idle)
        );
        assert_eq!(
            evaluate(&lane(), at(15.0), Some(0.3), &l),
            Verdict::Extend(ExtendReason::PreWrite)
        );
        assert_eq!(
            evaluate(&lane(), at(21.0), None, &l),
            Verdict::Kill(IdleKill::Idle)
        );
        let busy = Timeline {
            last_activity_at: Some(at(71.0) - 5_000.0),
            ..written()
        };
        assert_eq!(
            evaluate(&busy, at(71.0), None, &l),
            Verdict::Kill(IdleKill::HardCeiling)
        );
        let settled = Timeline {
            settled: true,
            ..written()
        };
        assert_eq!(evaluate(&settled, at(25.0), None, &l), Verdict::Ok);
    }

    #[test]
    fn boundaries_are_inclusive_and_high_utilization_wins() {
        let l = IdleLimits::default();
        assert_eq!(
            evaluate(&written(), T0 + 10.0 * MIN, None, &l),
            Verdict::Kill(IdleKill::Idle)
        );
        assert_eq!(
            evaluate(&written(), T0 + 10.0 * MIN - 1.0, None, &l),
            Verdict::Ok
        );
        assert_eq!(
            evaluate(&lane(), T0 + 10.0 * MIN, Some(0.9), &l),
            Verdict::Extend(ExtendReason::HighUtilization)
        );
        let one = IdleLimits {
            extend_factor: 1.0,
            ..l
        };
        assert_eq!(
            evaluate(&lane(), T0 + 10.0 * MIN, None, &one),
            Verdict::Kill(IdleKill::Idle)
        );
        let nan = Timeline {
            hard_ceiling_ms: f64::NAN,
            settled: true,
            ..lane()
        };
        assert_eq!(evaluate(&nan, f64::MAX, None, &l), Verdict::Ok);
        assert_eq!(next_check(&nan, T0, None, &l), f64::INFINITY);
    }

    #[test]
    fn next_check_is_where_the_verdict_changes() {
        let l = IdleLimits::default();
        // Pre-write: the extension at 10 min, the kill at 20, the ceiling at 70.
        assert_eq!(next_check(&lane(), T0, None, &l), T0 + 10.0 * MIN);
        assert_eq!(
            next_check(&lane(), T0 + 10.0 * MIN, None, &l),
            T0 + 20.0 * MIN
        );
        assert_eq!(next_check(&written(), T0, None, &l), T0 + 10.0 * MIN);
        let settled = Timeline {
            settled: true,
            ..lane()
        };
        assert_eq!(next_check(&settled, T0, None, &l), T0 + 70.0 * MIN);
        // Every instant before next_check has the verdict of now; next_check itself differs.
        for t in [lane(), written()] {
            for u in [None, Some(0.95)] {
                let mut now = T0;
                while now < T0 + 70.0 * MIN {
                    let next = next_check(&t, now, u, &l);
                    let v = evaluate(&t, now, u, &l);
                    assert_eq!(evaluate(&t, next - 1.0, u, &l), v);
                    assert_ne!(evaluate(&t, next, u, &l), v);
                    if matches!(v, Verdict::Kill(_)) {
                        break;
                    }
                    now = next;
                }
            }
        }
    }

    #[test]
    fn the_slab_is_evaluated_row_by_row() {
        let l = IdleLimits::default();
        let row = |t: &Timeline, flags: u32| {
            [
                t.started_at,
                t.last_tool_at,
                t.last_activity_at.unwrap_or(t.last_tool_at),
                t.first_write_at.unwrap_or(f64::NAN),
                t.hard_ceiling_ms,
                f64::from(flags),
                0.0,
            ]
        };
        let fresh = Timeline {
            started_at: T0 + 15.0 * MIN,
            last_tool_at: T0 + 15.0 * MIN,
            ..written()
        };
        let mut rows = Vec::new();
        rows.extend(row(&written(), slab::LIVE));
        rows.extend(row(&lane(), slab::LIVE));
        rows.extend(row(&written(), 0));
        rows.extend(row(&written(), slab::LIVE | slab::KILLED));
        rows.extend(row(&fresh, slab::LIVE));
        let mut verdicts = [9; 5];
        let next = evaluate_slab(&rows, T0 + 15.0 * MIN, None, &l, &mut verdicts);
        assert_eq!(verdicts, [3, 1, slab::SKIPPED, slab::SKIPPED, 0]);
        // The pre-write lane's kill at 20 min comes before the fresh one's at 25.
        assert_eq!(next, T0 + 20.0 * MIN);
    }

    #[test]
    fn the_observe_table() {
        assert_eq!(observe_effect("result", Some("success")), Effect::Settle);
        assert_eq!(observe_effect("rate_limit_event", None), Effect::Alive);
        assert_eq!(observe_effect("stream_event", None), Effect::Work);
        assert_eq!(
            observe_effect("system", Some("thinking_tokens")),
            Effect::Work
        );
        assert_eq!(observe_effect("system", Some("init")), Effect::None);
        assert_eq!(observe_effect("system", None), Effect::None);
        assert_eq!(observe_effect("tool_progress", None), Effect::HeartbeatWork);
        assert_eq!(observe_effect("assistant", None), Effect::None);
    }
}

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
//! Three more rules are ours and off by default (their limits are `f64::INFINITY`), so the
//! reference's verdicts stay the defaults: `startup_ms` (no message at all since registration;
//! checked right after the ceiling), `linger_ms` (settled, and nothing new since the `result`
//! for this long; checked instead of "settled: ok") and `no_progress_ms` (no work, heartbeats or
//! not, for this long; checked after the idle kill).
//!
//! # The slab ([`evaluate_slab`])
//!
//! The Node addon keeps every registered timeline in one `Float64Array`, [`slab::STRIDE`]
//! numbers per query, so a pass over 100,000 queries is one call with no object conversion.
//! The field offsets are the constants of [`slab`]; `first_write_at` is `NaN` for none.

use crate::event::{ExtendReason, KillKind};

/// The limits the idle policy reads. [`Default`] is the reference package's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleLimits {
    /// Base idle patience, ms (default 600,000).
    pub idle_ms: f64,
    /// How many times `idle_ms` a query gets while an extension holds (default 2).
    pub extend_factor: f64,
    /// Utilization (0 to 1) at or above which patience is extended (default 0.9).
    pub high_utilization: f64,
    /// Ours, off by default (`f64::INFINITY`): no message at all since registration, ms.
    pub startup_ms: f64,
    /// Ours, off by default: settled and nothing new for this long, ms.
    pub linger_ms: f64,
    /// Ours, off by default: no work (only heartbeats, or nothing) for this long, ms.
    pub no_progress_ms: f64,
}

impl Default for IdleLimits {
    fn default() -> Self {
        IdleLimits {
            idle_ms: 600_000.0,
            extend_factor: 2.0,
            high_utilization: 0.9,
            startup_ms: f64::INFINITY,
            linger_ms: f64::INFINITY,
            no_progress_ms: f64::INFINITY,
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
    /// A `result` came and no new work since: only the hard ceiling (and the linger) apply.
    pub settled: bool,
    /// When it settled, for the linger rule (`None`: never, or unknown).
    pub settled_at: Option<f64>,
    /// The last work (tool boundary, stream frame), for the no-progress rule.
    pub last_work_at: f64,
    /// A message was seen since registration (the startup rule applies until then).
    pub seen: bool,
}

/// Why the idle policy kills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdleKill {
    /// No activity for the patience.
    Idle,
    /// Total age reached `hard_ceiling_ms`.
    HardCeiling,
    /// Ours: no message at all within `startup_ms`.
    Startup,
    /// Ours: settled, then nothing new for `linger_ms`.
    Linger,
    /// Ours: no work for `no_progress_ms`.
    NoProgress,
}

impl IdleKill {
    /// The reference's names, `watchdog_idle` and `hard_ceiling`, and ours, `startup`,
    /// `linger`, `no_progress`.
    pub fn as_str(self) -> &'static str {
        match self {
            IdleKill::Idle => "watchdog_idle",
            IdleKill::HardCeiling => "hard_ceiling",
            IdleKill::Startup => "startup",
            IdleKill::Linger => "linger",
            IdleKill::NoProgress => "no_progress",
        }
    }

    /// The registry's kind of the same rule (`idle` for [`IdleKill::Idle`], `ceiling` for
    /// [`IdleKill::HardCeiling`]): the label the fleet metrics count it under.
    pub fn kill_kind(self) -> KillKind {
        match self {
            IdleKill::Idle => KillKind::Idle,
            IdleKill::HardCeiling => KillKind::Ceiling,
            IdleKill::Startup => KillKind::Startup,
            IdleKill::Linger => KillKind::Linger,
            IdleKill::NoProgress => KillKind::NoProgress,
        }
    }

    /// The kill of a [`Verdict::code`] (3 to 7), if it is one.
    pub fn from_code(code: i32) -> Option<IdleKill> {
        match code {
            3 => Some(IdleKill::Idle),
            4 => Some(IdleKill::HardCeiling),
            5 => Some(IdleKill::Startup),
            6 => Some(IdleKill::Linger),
            7 => Some(IdleKill::NoProgress),
            _ => None,
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
    /// `pre_write`, 2 extend `high_utilization`, 3 kill `watchdog_idle`, 4 kill `hard_ceiling`,
    /// 5 kill `startup`, 6 kill `linger`, 7 kill `no_progress`.
    pub fn code(self) -> i32 {
        match self {
            Verdict::Ok => 0,
            Verdict::Extend(ExtendReason::PreWrite) => 1,
            Verdict::Extend(ExtendReason::HighUtilization) => 2,
            Verdict::Kill(IdleKill::Idle) => 3,
            Verdict::Kill(IdleKill::HardCeiling) => 4,
            Verdict::Kill(IdleKill::Startup) => 5,
            Verdict::Kill(IdleKill::Linger) => 6,
            Verdict::Kill(IdleKill::NoProgress) => 7,
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
    if !t.seen && now - t.started_at >= limits.startup_ms {
        return Verdict::Kill(IdleKill::Startup);
    }
    if t.settled {
        if t.settled_at.is_some_and(|s| now - s >= limits.linger_ms) {
            return Verdict::Kill(IdleKill::Linger);
        }
        return Verdict::Ok;
    }
    let idle = now - last_activity(t);
    if idle >= patience(t, utilization, limits) {
        return Verdict::Kill(IdleKill::Idle);
    }
    if now - t.last_work_at >= limits.no_progress_ms {
        return Verdict::Kill(IdleKill::NoProgress);
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
/// extended patience, the hard ceiling, or one of the opt-in rules' deadlines, whichever comes
/// first. `f64::INFINITY` when no deadline is left (settled with no finite ceiling).
pub fn next_check(t: &Timeline, now: f64, utilization: Option<f64>, limits: &IdleLimits) -> f64 {
    let mut next = f64::INFINITY;
    let mut consider = |at: f64| {
        if at > now && at < next {
            next = at;
        }
    };
    consider(t.started_at + t.hard_ceiling_ms);
    if !t.seen {
        consider(t.started_at + limits.startup_ms);
    }
    if t.settled {
        if let Some(s) = t.settled_at {
            consider(s + limits.linger_ms);
        }
        return next;
    }
    let last = last_activity(t);
    consider(last + limits.idle_ms);
    consider(last + patience(t, utilization, limits));
    consider(t.last_work_at + limits.no_progress_ms);
    next
}

/// When the kill `kill`, decided for `t` at `now`, fell due (its lateness is `now` minus
/// this; never after `now`): the instant its rule's limit was reached on the clocks of `t`.
/// Only the idle rule's patience depends on the utilization, which the host reads at its
/// checks: `before` is the reading in force until this check, `utilization` the one the kill
/// was decided with. A kill the new reading made (it shortened the patience, which was not
/// reached under the old one) is due at the check itself, as the registry kills at the instant
/// a withdrawn extension is set.
pub fn kill_deadline(
    t: &Timeline,
    kill: IdleKill,
    now: f64,
    before: Option<f64>,
    utilization: Option<f64>,
    limits: &IdleLimits,
) -> f64 {
    let due = |u: Option<f64>| match kill {
        IdleKill::HardCeiling => t.started_at + t.hard_ceiling_ms,
        IdleKill::Startup => t.started_at + limits.startup_ms,
        IdleKill::Linger => t.settled_at.unwrap_or(now) + limits.linger_ms,
        IdleKill::Idle => last_activity(t) + patience(t, u, limits),
        IdleKill::NoProgress => t.last_work_at + limits.no_progress_ms,
    };
    due(utilization).max(due(before).min(now)).min(now)
}

/// The slab layout: the offsets of one timeline's fields in a row of [`slab::STRIDE`] numbers.
pub mod slab {
    /// Numbers per row.
    pub const STRIDE: usize = 9;
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
    /// Bit flags: [`LIVE`], [`SETTLED`], [`KILLED`], [`EXTEND_NOTED`], [`SEEN`].
    pub const FLAGS: usize = 5;
    /// The host's insertion sequence number (not read here).
    pub const SEQ: usize = 6;
    /// [`Timeline::settled_at`](super::Timeline::settled_at); `NaN` for none.
    pub const SETTLED_AT: usize = 7;
    /// [`Timeline::last_work_at`](super::Timeline::last_work_at).
    pub const LAST_WORK_AT: usize = 8;
    /// The row holds a registered query.
    pub const LIVE: u32 = 1;
    /// [`Timeline::settled`](super::Timeline::settled).
    pub const SETTLED: u32 = 2;
    /// The query was killed: it is not evaluated again.
    pub const KILLED: u32 = 4;
    /// The host already reported the extension (not read here).
    pub const EXTEND_NOTED: u32 = 8;
    /// [`Timeline::seen`](super::Timeline::seen).
    pub const SEEN: u32 = 16;
    /// The verdict code of a row that was not evaluated (free or killed).
    pub const SKIPPED: i32 = -1;

    /// The timeline in `row` (one [`STRIDE`]-long row).
    pub fn timeline(row: &[f64]) -> super::Timeline {
        let first = row[FIRST_WRITE_AT];
        let settled_at = row[SETTLED_AT];
        super::Timeline {
            started_at: row[STARTED_AT],
            last_tool_at: row[LAST_TOOL_AT],
            last_activity_at: Some(row[LAST_ACTIVITY_AT]),
            first_write_at: (!first.is_nan()).then_some(first),
            hard_ceiling_ms: row[HARD_CEILING_MS],
            settled: flags(row) & SETTLED != 0,
            settled_at: (!settled_at.is_nan()).then_some(settled_at),
            last_work_at: row[LAST_WORK_AT],
            seen: flags(row) & SEEN != 0,
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
            settled_at: None,
            last_work_at: T0,
            seen: true,
        }
    }

    fn written() -> Timeline {
        Timeline {
            first_write_at: Some(T0),
            ..lane()
        }
    }

    #[test]
    fn a_kill_is_due_where_its_rule_was_reached_or_at_the_check_a_new_reading_made_it() {
        let l = IdleLimits {
            startup_ms: 3.0 * MIN,
            linger_ms: 5.0 * MIN,
            no_progress_ms: 30.0 * MIN,
            ..IdleLimits::default()
        };
        let at = |m: f64| T0 + m * MIN;
        let d = |t: &Timeline, k, now, before, u| kill_deadline(t, k, now, before, u, &l);
        // Each rule's own limit, whatever the readings.
        assert_eq!(
            d(&lane(), IdleKill::HardCeiling, at(71.0), None, None),
            at(70.0)
        );
        let unseen = Timeline {
            seen: false,
            ..lane()
        };
        assert_eq!(d(&unseen, IdleKill::Startup, at(3.5), None, None), at(3.0));
        let settled = Timeline {
            settled: true,
            settled_at: Some(at(1.0)),
            ..lane()
        };
        assert_eq!(d(&settled, IdleKill::Linger, at(6.0), None, None), at(6.0));
        let pinged = Timeline {
            last_activity_at: Some(at(29.0)),
            ..written()
        };
        assert_eq!(
            d(&pinged, IdleKill::NoProgress, at(31.0), None, None),
            at(30.0)
        );
        // Idle before the first write: the doubled patience (20 minutes).
        assert_eq!(d(&lane(), IdleKill::Idle, at(20.5), None, None), at(20.0));
        assert_eq!(
            d(&written(), IdleKill::Idle, at(12.0), Some(0.1), Some(0.1)),
            at(10.0)
        );
        // High utilization held the patience at 20 minutes until this check read a low one:
        // due at the check, not 5 minutes ago at the base patience.
        assert_eq!(
            d(&written(), IdleKill::Idle, at(15.0), Some(0.95), Some(0.1)),
            at(15.0)
        );
        // ... unless the old reading's patience had run out too: due there.
        assert_eq!(
            d(&written(), IdleKill::Idle, at(25.0), Some(0.95), Some(0.1)),
            at(20.0)
        );
        // Never after the check.
        assert_eq!(d(&written(), IdleKill::Idle, at(5.0), None, None), at(5.0));
        for code in 3..=7 {
            let kill = IdleKill::from_code(code).unwrap();
            assert_eq!(Verdict::Kill(kill).code(), code);
        }
        assert_eq!(IdleKill::from_code(2), None);
        assert_eq!(IdleKill::Idle.kill_kind(), KillKind::Idle);
        assert_eq!(IdleKill::HardCeiling.kill_kind(), KillKind::Ceiling);
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
                f64::from(flags | slab::SEEN),
                0.0,
                f64::NAN,
                t.last_work_at,
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
    fn the_opt_in_rules_are_off_by_default_and_kill_at_their_deadlines() {
        let off = IdleLimits::default();
        let on = IdleLimits {
            startup_ms: 3.0 * MIN,
            linger_ms: 11.0 * MIN,
            no_progress_ms: 30.0 * MIN,
            ..off
        };
        let silent = Timeline {
            seen: false,
            ..written()
        };
        assert_eq!(evaluate(&silent, T0 + 3.0 * MIN, None, &off), Verdict::Ok);
        assert_eq!(
            evaluate(&silent, T0 + 3.0 * MIN, None, &on),
            Verdict::Kill(IdleKill::Startup)
        );
        assert_eq!(next_check(&silent, T0, None, &on), T0 + 3.0 * MIN);
        let settled = Timeline {
            settled: true,
            settled_at: Some(T0 + MIN),
            ..written()
        };
        assert_eq!(evaluate(&settled, T0 + 12.0 * MIN, None, &off), Verdict::Ok);
        assert_eq!(
            evaluate(&settled, T0 + 12.0 * MIN, None, &on),
            Verdict::Kill(IdleKill::Linger)
        );
        assert_eq!(next_check(&settled, T0 + MIN, None, &on), T0 + 12.0 * MIN);
        // A heartbeat a minute ago keeps the idle clock fresh, not the progress clock.
        let pinging = Timeline {
            last_activity_at: Some(T0 + 29.0 * MIN),
            ..written()
        };
        assert_eq!(evaluate(&pinging, T0 + 30.0 * MIN, None, &off), Verdict::Ok);
        assert_eq!(
            evaluate(&pinging, T0 + 30.0 * MIN, None, &on),
            Verdict::Kill(IdleKill::NoProgress)
        );
        assert_eq!(
            next_check(&pinging, T0 + 29.0 * MIN, None, &on),
            T0 + 30.0 * MIN
        );
        // The ceiling still wins over every one of them.
        let old = Timeline {
            hard_ceiling_ms: 3.0 * MIN,
            ..silent
        };
        assert_eq!(
            evaluate(&old, T0 + 3.0 * MIN, None, &on),
            Verdict::Kill(IdleKill::HardCeiling)
        );
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

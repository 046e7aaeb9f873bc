//! The one Prometheus rendering of a [`Metrics`] snapshot (text exposition format 0.0.4), what
//! every host's `/metrics` answers.

use std::fmt::Write as _;

use super::catalogue::{
    Metric, EXTENSION_COUNT, KILL_COUNT, KILL_LATENESS, RATE_LIMIT_UTILIZATION, SESSIONS,
    SESSION_COUNT, STALLING_WARNING_COUNT,
};
use super::{Metrics, CLOCKS, KINDS, OTHER_OUTCOMES, REASONS, SOURCE};
use watchdog_core::OutcomeKind;

impl Metrics {
    /// The snapshot in the Prometheus text exposition format 0.0.4 (what a scrape of
    /// `/metrics` answers; serve it as [`CONTENT_TYPE`](super::scrape::CONTENT_TYPE)). Every series of known
    /// labels is present, at 0 until counted, so `rate()` sees its first increase; the
    /// utilization sample is left out while it is unknown.
    pub fn render_prometheus(&self) -> String {
        let mut out = String::with_capacity(4096);
        let o = &mut out;
        let name = family(o, &SESSIONS);
        sample(o, &name, "", self.sessions as f64);

        let name = family(o, &SESSION_COUNT);
        for (outcome, n) in OTHER_OUTCOMES.iter().zip(self.ended_other) {
            let labels = format!("outcome=\"{}\",", outcome.as_str());
            sample(o, &name, &labels, n as f64);
        }
        let killed = OutcomeKind::Killed.as_str();
        for (kind, n) in KINDS.iter().zip(self.ended_killed) {
            let labels = format!("outcome=\"{killed}\",kill_kind=\"{}\",", kind.as_str());
            sample(o, &name, &labels, n as f64);
        }

        let name = family(o, &KILL_COUNT);
        for (kind, n) in KINDS.iter().zip(self.kills) {
            let labels = format!("kill_kind=\"{}\",", kind.as_str());
            sample(o, &name, &labels, n as f64);
        }

        let name = family(o, &STALLING_WARNING_COUNT);
        for (clock, n) in CLOCKS.iter().zip(self.stalling) {
            let labels = format!("clock=\"{}\",", clock.as_str());
            sample(o, &name, &labels, n as f64);
        }

        let name = family(o, &EXTENSION_COUNT);
        for (reason, n) in REASONS.iter().zip(self.extensions) {
            let labels = format!("reason=\"{}\",", reason.as_str());
            sample(o, &name, &labels, n as f64);
        }

        let name = family(o, &KILL_LATENESS);
        let bucket = format!("{name}_bucket");
        for (le, n) in self.kill_lateness.buckets() {
            let labels = format!("le=\"{}\",", fmt_value(le));
            sample(o, &bucket, &labels, n as f64);
        }
        let sum = self.kill_lateness.sum.as_secs_f64();
        sample(o, &format!("{name}_sum"), "", sum);
        let count = self.kill_lateness.count as f64;
        sample(o, &format!("{name}_count"), "", count);

        // Absent while unknown.
        let name = family(o, &RATE_LIMIT_UTILIZATION);
        if let Some(u) = self.utilization {
            sample(o, &name, "", u);
        }
        out
    }
}

/// The `# HELP` and `# TYPE` lines of `metric`'s family; returns its name.
fn family(out: &mut String, metric: &Metric) -> String {
    let name = metric.prometheus_name();
    let _ = writeln!(out, "# HELP {name} {}.", metric.description);
    let _ = writeln!(out, "# TYPE {name} {}", metric.kind.as_str());
    name
}

/// One sample line; `labels` is empty or `key="value",` pairs (each ending with a comma).
fn sample(out: &mut String, name: &str, labels: &str, value: f64) {
    let _ = writeln!(out, "{name}{{{labels}{SOURCE}}} {}", fmt_value(value));
}

/// A value as Prometheus spells it: `NaN`, `+Inf`, `-Inf`, or a decimal.
fn fmt_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_spelled_as_prometheus_reads_them() {
        assert_eq!(fmt_value(f64::NAN), "NaN");
        assert_eq!(fmt_value(f64::INFINITY), "+Inf");
        assert_eq!(fmt_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(fmt_value(0.0001), "0.0001");
        assert_eq!(fmt_value(3.0), "3");
    }
}

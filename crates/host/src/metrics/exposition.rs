//! The one Prometheus rendering of a [`Metrics`] snapshot (text exposition format 0.0.4), what
//! every host's `/metrics` answers.

use std::fmt::Write as _;

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
        family(
            o,
            "agent_watchdog_sessions",
            "gauge",
            "Sessions registered with the watchdog now.",
        );
        sample(o, "agent_watchdog_sessions", "", self.sessions as f64);

        let name = "agent_watchdog_session_count_total";
        family(
            o,
            "agent_watchdog_session_count_total",
            "counter",
            "Sessions that ended, by outcome (and kill kind when killed).",
        );
        for (outcome, n) in OTHER_OUTCOMES.iter().zip(self.ended_other) {
            let labels = format!("outcome=\"{}\",", outcome.as_str());
            sample(o, name, &labels, n as f64);
        }
        let killed = OutcomeKind::Killed.as_str();
        for (kind, n) in KINDS.iter().zip(self.ended_killed) {
            let labels = format!("outcome=\"{killed}\",kill_kind=\"{}\",", kind.as_str());
            sample(o, name, &labels, n as f64);
        }

        family(
            o,
            "agent_watchdog_kill_count_total",
            "counter",
            "Kills, by kind.",
        );
        for (kind, n) in KINDS.iter().zip(self.kills) {
            let labels = format!("kill_kind=\"{}\",", kind.as_str());
            sample(o, "agent_watchdog_kill_count_total", &labels, n as f64);
        }

        family(
            o,
            "agent_watchdog_stalling_warning_count_total",
            "counter",
            "Stalling warnings, by clock.",
        );
        for (clock, n) in CLOCKS.iter().zip(self.stalling) {
            let labels = format!("clock=\"{}\",", clock.as_str());
            let name = "agent_watchdog_stalling_warning_count_total";
            sample(o, name, &labels, n as f64);
        }

        family(
            o,
            "agent_watchdog_extension_count_total",
            "counter",
            "Idle-patience extensions, by reason.",
        );
        for (reason, n) in REASONS.iter().zip(self.extensions) {
            let labels = format!("reason=\"{}\",", reason.as_str());
            sample(o, "agent_watchdog_extension_count_total", &labels, n as f64);
        }

        let name = "agent_watchdog_kill_lateness_seconds";
        family(
            o,
            name,
            "histogram",
            "From a kill's deadline to the watchdog delivering the kill, on the watchdog's clock.",
        );
        let bucket = format!("{name}_bucket");
        for (le, n) in self.kill_lateness.buckets() {
            let labels = format!("le=\"{}\",", fmt_value(le));
            sample(o, &bucket, &labels, n as f64);
        }
        let sum = self.kill_lateness.sum.as_secs_f64();
        sample(o, &format!("{name}_sum"), "", sum);
        let count = self.kill_lateness.count as f64;
        sample(o, &format!("{name}_count"), "", count);

        let name = "agent_watchdog_rate_limit_utilization_ratio";
        family(
            o,
            name,
            "gauge",
            "The rate-limit utilization last set (0-1, highest window); absent while unknown.",
        );
        if let Some(u) = self.utilization {
            sample(o, name, "", u);
        }
        out
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
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

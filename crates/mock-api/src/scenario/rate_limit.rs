//! Unified rate-limit response headers, as a gateway sends them.

use std::time::Duration;

/// Unified rate-limit response headers (`anthropic-ratelimit-unified-*`).
///
/// The CLI only reads them when authenticated with a gateway token (see
/// [`crate::harness::gateway_jwt`]). Reset times are offsets from the moment the
/// response is written.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimitHeaders {
    status: String,
    reset_in: Duration,
    windows: Vec<(String, f64, Duration, String)>,
    overage: Option<(String, String)>,
    representative_claim: Option<String>,
    extra: Vec<(String, String)>,
}

impl RateLimitHeaders {
    /// Headers with `anthropic-ratelimit-unified-status: status` and `-reset` `reset_in` from now.
    pub fn new(status: impl Into<String>, reset_in: Duration) -> Self {
        RateLimitHeaders {
            status: status.into(),
            reset_in,
            windows: Vec::new(),
            overage: None,
            representative_claim: None,
            extra: Vec::new(),
        }
    }

    /// Adds the `-5h-utilization`, `-5h-reset`, `-5h-status` headers.
    pub fn five_hour(
        self,
        utilization: f64,
        reset_in: Duration,
        status: impl Into<String>,
    ) -> Self {
        self.window("5h", utilization, reset_in, status)
    }

    /// Adds the `-7d-utilization`, `-7d-reset`, `-7d-status` headers.
    pub fn seven_day(
        self,
        utilization: f64,
        reset_in: Duration,
        status: impl Into<String>,
    ) -> Self {
        self.window("7d", utilization, reset_in, status)
    }

    /// Adds `-{name}-utilization`, `-{name}-reset`, `-{name}-status` headers for any window name.
    pub fn window(
        mut self,
        name: impl Into<String>,
        utilization: f64,
        reset_in: Duration,
        status: impl Into<String>,
    ) -> Self {
        self.windows
            .push((name.into(), utilization, reset_in, status.into()));
        self
    }

    /// Adds `-overage-status` and `-overage-disabled-reason`.
    pub fn overage(
        mut self,
        status: impl Into<String>,
        disabled_reason: impl Into<String>,
    ) -> Self {
        self.overage = Some((status.into(), disabled_reason.into()));
        self
    }

    /// Adds `-representative-claim` (e.g. `five_hour`).
    pub fn representative_claim(mut self, claim: impl Into<String>) -> Self {
        self.representative_claim = Some(claim.into());
        self
    }

    /// Adds any other header verbatim.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra
            .push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    /// 5-hour window at 95 % with the reset `reset_in` ahead (the CLI derives
    /// `allowed_warning` when the reset is at least ~1.4 h away), 7-day at 42 %.
    pub fn warning(reset_in: Duration) -> Self {
        RateLimitHeaders::new("allowed", reset_in)
            .five_hour(0.95, reset_in, "allowed_warning")
            .seven_day(0.42, Duration::from_secs(5 * 86_400), "allowed")
            .overage("rejected", "org_level_disabled")
            .representative_claim("five_hour")
    }

    /// 5-hour window exhausted (`rejected`), resetting `reset_in` from now.
    pub fn rejected(reset_in: Duration) -> Self {
        RateLimitHeaders::new("rejected", reset_in)
            .five_hour(1.0, reset_in, "rejected")
            .seven_day(0.42, Duration::from_secs(5 * 86_400), "allowed")
            .overage("rejected", "org_level_disabled")
            .representative_claim("five_hour")
    }

    /// The header list, with resets computed from `now_epoch_secs`.
    pub fn to_headers(&self, now_epoch_secs: u64) -> Vec<(String, String)> {
        const P: &str = "anthropic-ratelimit-unified";
        let at = |d: &Duration| (now_epoch_secs + d.as_secs()).to_string();
        let mut h = vec![
            (format!("{P}-status"), self.status.clone()),
            (format!("{P}-reset"), at(&self.reset_in)),
        ];
        for (name, util, reset, status) in &self.windows {
            h.push((format!("{P}-{name}-utilization"), util.to_string()));
            h.push((format!("{P}-{name}-reset"), at(reset)));
            h.push((format!("{P}-{name}-status"), status.clone()));
        }
        if let Some((status, reason)) = &self.overage {
            h.push((format!("{P}-overage-status"), status.clone()));
            h.push((format!("{P}-overage-disabled-reason"), reason.clone()));
        }
        if let Some(claim) = &self.representative_claim {
            h.push((format!("{P}-representative-claim"), claim.clone()));
        }
        h.extend(self.extra.iter().cloned());
        h
    }
}

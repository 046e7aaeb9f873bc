//! How a run ended ([`TerminalFacts`]) and the part of it a marker keeps ([`OutcomeFacts`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::event::{Backoff, Outcome};
use crate::facts::{ClaudeSessionId, ResultFacts};
use crate::rate_limit::RateLimitMonitor;
use crate::record::RunRecord;
use crate::wall::WallMs;

/// Which run of a recovery chain a [`TerminalFacts`] describes, as far as its host knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ChainRole {
    /// The host does not say: a marker made before the run ended means a duplicate event;
    /// one made after it, that this run is the continuation.
    #[default]
    Unknown,
    /// A run the host started by itself, not as a continuation. A marker for its session was
    /// made by another run: the session was continued elsewhere, and its notice (if any) is
    /// that run's to give, from that run's facts.
    First,
    /// The continuation the host started after claiming the marker.
    Continuation,
}

/// How one run ended, with everything the decision may need.
#[derive(Debug, Clone, PartialEq)]
pub struct TerminalFacts {
    /// How the run ended (from the registry).
    pub outcome: Outcome,
    /// When it ended, epoch ms (the base of a rate-limit wait).
    pub ended_at_ms: WallMs,
    /// The Claude Code session id, needed to resume: the registry's
    /// ([`Registry::claude_session_id`](crate::Registry::claude_session_id)).
    pub session_id: Option<ClaudeSessionId>,
    /// The reset time of a rejected rate-limit window, epoch ms, if one was seen.
    pub rate_limit_resets_at_ms: Option<WallMs>,
    /// Whether a rejected rate-limit reading was seen.
    pub rate_limit_rejected: bool,
    /// Whether the last rate-limit reading said `errorCode: "credits_required"`.
    pub credits_required: bool,
    /// Whether the user interrupted the run (SIGINT, an `interrupt` request).
    pub user_interrupted: bool,
    /// `total_cost_usd` of the `result`, if known.
    pub cost_usd: Option<f64>,
    /// `num_turns` of the `result`, if known.
    pub num_turns: Option<u64>,
    /// Which run of the chain this is (default [`ChainRole::Unknown`]).
    pub role: ChainRole,
    /// The announced API back-off storm the kill came in, if any ([`Kill::backoff`]): the API
    /// was failing, so resuming at once would go straight back into it.
    ///
    /// [`Kill::backoff`]: crate::Kill::backoff
    pub backoff: Option<Backoff>,
}

impl TerminalFacts {
    /// Facts with only the outcome and the end time known.
    pub fn new(outcome: Outcome, ended_at_ms: WallMs) -> Self {
        TerminalFacts {
            outcome,
            ended_at_ms,
            session_id: None,
            rate_limit_resets_at_ms: None,
            rate_limit_rejected: false,
            credits_required: false,
            user_interrupted: false,
            cost_usd: None,
            num_turns: None,
            role: ChainRole::Unknown,
            backoff: None,
        }
    }
    /// The facts of a run's record ([`RunRecord`]) that ended at `ended_at_ms`: its outcome,
    /// session id, the cost and turns of its last `result`, and its rate-limit readings. The
    /// host adds what only it knows (its role in a chain, a user's interrupt).
    ///
    /// ```
    /// use std::time::Instant;
    /// use watchdog_core::{Limits, Registry, SessionConfig, recovery::TerminalFacts};
    /// let t0 = Instant::now();
    /// let mut reg = Registry::new(Limits::default());
    /// let id = reg.register(t0, SessionConfig::default());
    /// reg.observe_line(t0, id, br#"{"type":"system","subtype":"init","session_id":"s1"}"#);
    /// reg.observe_line(t0, id, br#"{"type":"result","subtype":"success","is_error":true,"api_error":"max_output_tokens","num_turns":4}"#);
    /// let facts = TerminalFacts::from_record(&reg.finish(t0, id).unwrap(), 1_000);
    /// assert_eq!(facts.session_id.as_ref().map(|s| s.as_str()), Some("s1"));
    /// assert_eq!(facts.num_turns, Some(4));
    /// ```
    pub fn from_record(record: &RunRecord, ended_at_ms: WallMs) -> Self {
        let mut facts = TerminalFacts::new(record.outcome.clone(), ended_at_ms);
        if let Some(id) = &record.session_id {
            facts = facts.with_session_id(id.clone());
        }
        if let Some(result) = &record.result {
            facts = facts.with_result(result);
        }
        facts.backoff = record
            .kill
            .as_ref()
            .and_then(|k| k.backoff.as_deref().cloned());
        facts.with_rate_limits(&record.rate_limits)
    }
    /// Which run of the chain this is.
    pub fn with_role(mut self, role: ChainRole) -> Self {
        self.role = role;
        self
    }
    /// The session id.
    pub fn with_session_id(mut self, id: ClaudeSessionId) -> Self {
        self.session_id = Some(id);
        self
    }
    /// A rejected rate-limit reading and its reset time, if known.
    pub fn with_rejection(mut self, resets_at_ms: Option<WallMs>) -> Self {
        self.rate_limit_rejected = true;
        self.rate_limit_resets_at_ms = resets_at_ms;
        self
    }
    /// `errorCode: "credits_required"` was seen.
    pub fn with_credits_required(mut self, yes: bool) -> Self {
        self.credits_required = yes;
        self
    }
    /// The user interrupted the run.
    pub fn with_user_interrupt(mut self, yes: bool) -> Self {
        self.user_interrupted = yes;
        self
    }
    /// Cost and turns.
    pub fn with_usage(mut self, cost_usd: Option<f64>, num_turns: Option<u64>) -> Self {
        self.cost_usd = cost_usd.filter(|c| c.is_finite());
        self.num_turns = num_turns;
        self
    }
    /// Cost and turns of the run's last `result` (fields it lacks are kept). The session id
    /// is not read here: it is the registry's ([`Registry::claude_session_id`](crate::Registry::claude_session_id)).
    pub fn with_result(mut self, result: &ResultFacts) -> Self {
        self.cost_usd = result.total_cost_usd.or(self.cost_usd);
        self.num_turns = result.num_turns.or(self.num_turns);
        self
    }
    /// The rejection and `credits_required` state of a rate-limit monitor at the end of the
    /// run (a rejection that already reset by then does not count).
    pub fn with_rate_limits(mut self, monitor: &RateLimitMonitor) -> Self {
        // A rejection whose reset already passed still tells when it reset (the wait is then
        // over), rather than leaving the reset time unknown.
        let rejected = monitor.rejection(self.ended_at_ms).or_else(|| {
            monitor
                .windows()
                .filter(|w| w.is_rejected() && w.resets_at_ms.is_some())
                .max_by_key(|w| w.resets_at_ms)
        });
        if let Some(w) = rejected {
            self.rate_limit_rejected = true;
            self.rate_limit_resets_at_ms = w.resets_at_ms;
        }
        self.credits_required = monitor.credits_required();
        self
    }
    /// The serialisable summary kept in a [`Marker`](super::Marker) and shown in a [`Notice`](super::Notice).
    pub fn summary(&self) -> OutcomeFacts {
        let mut f = OutcomeFacts {
            outcome: self.outcome.as_str().to_owned(),
            kill_kind: None,
            subtype: None,
            terminal_reason: None,
            stop_reason: None,
            api_error: None,
            api_error_status: None,
            rate_limit_resets_at_ms: self.rate_limit_resets_at_ms,
            cost_usd: self.cost_usd,
            num_turns: self.num_turns,
            ended_at_ms: self.ended_at_ms,
        };
        match &self.outcome {
            Outcome::Killed { kind } => f.kill_kind = Some(kind.as_str().to_owned()),
            Outcome::ErrorResult(r) => {
                f.subtype = r.subtype.clone();
                f.terminal_reason = r.terminal_reason.clone();
                f.stop_reason = r.stop_reason.clone();
                f.api_error = r.api_error.clone();
                f.api_error_status = r.api_error_status;
            }
            _ => {}
        }
        f
    }
}

/// The facts of one run as stored in a marker and shown in a notice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeFacts {
    /// [`Outcome::as_str`]: `success`, `error_result`, `killed`, `no_result`, `incomplete`.
    pub outcome: String,
    /// The kill kind, for `killed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_kind: Option<String>,
    /// `subtype` of the `result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtype: Option<String>,
    /// `terminal_reason` of the `result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_reason: Option<String>,
    /// `stop_reason` of the `result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// `api_error` of the `result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_error: Option<String>,
    /// `api_error_status` of the `result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_error_status: Option<u16>,
    /// Reset time of a rejected rate-limit window, epoch ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_resets_at_ms: Option<WallMs>,
    /// Cost in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_turns: Option<u64>,
    /// When the run ended, epoch ms.
    pub ended_at_ms: WallMs,
}

/// `error_result (api_error: max_output_tokens), 4 turns, $0.0123` or `killed (idle)`.
impl fmt::Display for OutcomeFacts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.outcome)?;
        let detail = self
            .kill_kind
            .clone()
            .or_else(|| self.api_error.as_ref().map(|e| format!("api_error: {e}")))
            .or_else(|| self.api_error_status.map(|s| format!("HTTP {s}")))
            .or_else(|| self.subtype.clone().filter(|s| s != "success"))
            .or_else(|| self.terminal_reason.clone());
        if let Some(d) = detail {
            write!(f, " ({d})")?;
        }
        if let Some(n) = self.num_turns {
            write!(f, ", {n} turn{}", if n == 1 { "" } else { "s" })?;
        }
        if let Some(c) = self.cost_usd {
            write!(f, ", ${c:.4}")?;
        }
        Ok(())
    }
}

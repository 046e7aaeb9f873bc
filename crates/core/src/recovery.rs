//! The recovery decision: continue a stopped session **at most once**, never twice.
//!
//! # At most once, exactly once
//!
//! The guarantee is **at most once**: the driver claims the session's marker in the
//! [`Ledger`] before it continues, and a claimed marker is never claimed again, so reruns,
//! duplicate events, racing processes and crashes cannot continue a session twice (a crash
//! between the claim and the continuation loses the continuation rather than repeating it).
//! **Exactly once** holds only while the driver lives past the claim: then the continuation
//! does start, once. The docs of this project use the two phrases in these senses only.
//!
//! Pure and sans-IO. Given how a run ended ([`TerminalFacts`]) and what the durable ledger
//! says about its session ([`LedgerState`]), [`Recovery::decide`] returns a [`Decision`]:
//! continue once (with a prompt, maybe after a wait), give the single notice of a failed
//! continuation, or do nothing (with the reason). The [`Ledger`] trait is the durable,
//! race-free marker store the driver consults before continuing; the file implementation lives
//! in the runtime crate, [`MemoryLedger`] here is for tests and single-process hosts.
//!
//! # Triggers
//!
//! | trigger | when | default |
//! |---|---|---|
//! | [`Trigger::OutputLimit`] | a `result` with `terminal_reason: "api_error"`, `api_error: "max_output_tokens"` (its `subtype` is `"success"`) | on |
//! | [`Trigger::AfterKill`] | a watchdog kill of kind `idle`, `no_progress` or `linger` (never `ceiling`, never `startup`) | off |
//! | [`Trigger::RateLimitWait`] | a `result` with `terminal_reason: "api_error"` after a rejected rate-limit reading, or with `api_error_status: 429`, **and** a known reset time within `max_wait` | off |
//!
//! Never a trigger: success, `error_max_turns`, `error_max_budget_usd`,
//! `error_during_execution`, refusals, a user interrupt, `credits_required`, a run without a
//! `result`, and any `terminal_reason`, `subtype` or error we do not recognise (fail closed).
//!
//! # The driver's protocol
//!
//! 1. `state = LedgerState::from(ledger.get(id)?)`; `decision = recovery.decide(&facts, &state)`.
//! 2. On [`Decision::Continue`]: build the [`Marker`] ([`Marker::for_continue`]) and
//!    `ledger.try_claim(id, &marker)`. Only on [`Claim::Won`] wait until `wait_until` and
//!    resume the same session with the prompt. [`Claim::AlreadyClaimed`] or an error: do not
//!    continue (fail closed).
//! 3. On [`Decision::Notice`]: `ledger.record_notice(id)`; show the notice only when it
//!    returns `Ok(true)`.
//!
//! Subagents (Claude Code's `Agent` tool) have their own trigger and marker key (session id +
//! agent id): see [`subagent`].
//!
//! ```
//! use watchdog_core::recovery::*;
//! use watchdog_core::{ClaudeSessionId, Outcome, ResultFacts};
//!
//! let id = "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc";
//! let cut_off = Outcome::ErrorResult(Box::new(ResultFacts {
//!     subtype: Some("success".into()),
//!     is_error: Some(true),
//!     terminal_reason: Some("api_error".into()),
//!     stop_reason: Some("stop_sequence".into()),
//!     api_error: Some("max_output_tokens".into()),
//!     ..ResultFacts::default()
//! }));
//! let recovery = Recovery::default();
//! let ledger = MemoryLedger::default();
//!
//! // First run: continue once.
//! let sid = ClaudeSessionId::parse(id).unwrap();
//! let facts = TerminalFacts::new(cut_off.clone(), 1_000).with_session_id(sid.clone());
//! let state = LedgerState::from(ledger.get(id).unwrap());
//! let decision = recovery.decide(&facts, &state);
//! let Decision::Continue { trigger: Trigger::OutputLimit, .. } = &decision else { panic!() };
//! let marker = Marker::for_continue(&facts, &decision).unwrap();
//! assert_eq!(ledger.try_claim(id, &marker).unwrap(), Claim::Won);
//! assert_eq!(ledger.try_claim(id, &marker).unwrap(), Claim::AlreadyClaimed);
//!
//! // The continued run is cut off again: one notice, then nothing.
//! let again = TerminalFacts::new(cut_off, 2_000).with_session_id(sid);
//! let state = LedgerState::from(ledger.get(id).unwrap());
//! assert!(matches!(recovery.decide(&again, &state), Decision::Notice(_)));
//! assert!(ledger.record_notice(id).unwrap());
//! let state = LedgerState::from(ledger.get(id).unwrap());
//! assert!(matches!(recovery.decide(&again, &state), Decision::Nothing(Skip::AlreadyNoticed)));
//! ```

pub mod subagent;

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{defaults, ConfigError, IntoValid, PositiveDuration};
use crate::event::{KillKind, Outcome};
use crate::facts::{ClaudeSessionId, ResultFacts};
use crate::rate_limit::{format_iso_ms, RateLimitMonitor, WallMs};

/// What made a run worth continuing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The CLI gave up on the output token limit (`api_error: "max_output_tokens"`).
    OutputLimit,
    /// The watchdog killed a stalled run (`idle`, `no_progress` or `linger`).
    AfterKill,
    /// A rate-limit rejection with a known reset time.
    RateLimitWait,
}

impl Trigger {
    /// Snake-case name: `output_limit`, `after_kill`, `rate_limit_wait`.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::OutputLimit => "output_limit",
            Trigger::AfterKill => "after_kill",
            Trigger::RateLimitWait => "rate_limit_wait",
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Default continuation prompt after the output token limit.
pub const OUTPUT_LIMIT_PROMPT: &str = "Your previous reply hit the output token limit before \
the task was finished. Continue the unfinished task from where it stopped, in smaller pieces, \
without recap.";
/// Default continuation prompt after a watchdog kill.
pub const AFTER_KILL_PROMPT: &str = "The previous run was stopped because it stopped making \
progress. Continue the unfinished task from where it stopped, without recap.";
/// Default continuation prompt after a rate-limit wait.
pub const RATE_LIMIT_PROMPT: &str = "The rate limit has reset. Continue the unfinished task \
from where it stopped, without recap.";

/// The recovery policy: which triggers are on, the prompts, the wait bounds. Plain data.
///
/// # Default
///
/// | option | default | rule |
/// |---|---|---|
/// | `output_limit` | on | continue after `api_error: "max_output_tokens"` |
/// | `after_kill` | off | continue after an `idle`, `no_progress` or `linger` kill |
/// | `rate_limit_wait` | off | wait for a rejected window's reset, then continue |
/// | prompts | [`OUTPUT_LIMIT_PROMPT`], [`AFTER_KILL_PROMPT`], [`RATE_LIMIT_PROMPT`] | the continuation prompt of each trigger; non-empty |
/// | `max_wait` | 6h | a reset further away than this is not waited for; > 0 |
/// | `reset_margin` | 30s | added to the reset time before continuing |
///
/// The values are the constants of [`config::defaults`](crate::config::defaults). Every row,
/// checked against `Recovery::default()`:
///
/// ```
/// use std::time::Duration;
/// use watchdog_core::recovery::*;
/// let d = Recovery::default();
/// assert!(d.is_enabled(Trigger::OutputLimit));
/// assert!(!d.is_enabled(Trigger::AfterKill));
/// assert!(!d.is_enabled(Trigger::RateLimitWait));
/// assert_eq!(d.prompt(Trigger::OutputLimit), OUTPUT_LIMIT_PROMPT);
/// assert_eq!(d.prompt(Trigger::AfterKill), AFTER_KILL_PROMPT);
/// assert_eq!(d.prompt(Trigger::RateLimitWait), RATE_LIMIT_PROMPT);
/// assert_eq!(d.max_wait(), Duration::from_secs(6 * 3600));
/// assert_eq!(d.reset_margin(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Recovery {
    output_limit: bool,
    after_kill: bool,
    rate_limit_wait: bool,
    prompts: [String; 3],
    max_wait: PositiveDuration,
    reset_margin: Duration,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery {
            output_limit: true,
            after_kill: false,
            rate_limit_wait: false,
            prompts: [
                OUTPUT_LIMIT_PROMPT.into(),
                AFTER_KILL_PROMPT.into(),
                RATE_LIMIT_PROMPT.into(),
            ],
            max_wait: defaults::MAX_WAIT,
            reset_margin: defaults::RESET_MARGIN,
        }
    }
}

fn index(t: Trigger) -> usize {
    match t {
        Trigger::OutputLimit => 0,
        Trigger::AfterKill => 1,
        Trigger::RateLimitWait => 2,
    }
}

impl Recovery {
    /// A policy with every trigger off (nothing is ever continued).
    pub fn disabled() -> Self {
        Recovery {
            output_limit: false,
            ..Recovery::default()
        }
    }
    /// Turn one trigger on or off.
    pub fn with_trigger(mut self, trigger: Trigger, on: bool) -> Self {
        match trigger {
            Trigger::OutputLimit => self.output_limit = on,
            Trigger::AfterKill => self.after_kill = on,
            Trigger::RateLimitWait => self.rate_limit_wait = on,
        }
        self
    }
    /// The continuation prompt of `trigger`. Must not be blank.
    pub fn with_prompt(
        mut self,
        trigger: Trigger,
        prompt: impl Into<String>,
    ) -> Result<Self, ConfigError> {
        let prompt = prompt.into();
        if prompt.trim().is_empty() {
            return Err(ConfigError {
                option: "prompt",
                allowed: "a non-empty text",
                value: format!("{prompt:?}"),
            });
        }
        self.prompts[index(trigger)] = prompt;
        Ok(self)
    }
    /// The longest wait for a rate-limit reset. Must be > 0 ([`PositiveDuration`]).
    pub fn with_max_wait(
        mut self,
        max_wait: impl IntoValid<PositiveDuration>,
    ) -> Result<Self, ConfigError> {
        self.max_wait = max_wait.into_valid().map_err(|e| e.option("max_wait"))?;
        Ok(self)
    }
    /// The margin added to a reset time.
    pub fn with_reset_margin(mut self, margin: Duration) -> Self {
        self.reset_margin = margin;
        self
    }
    /// Whether `trigger` is on.
    pub fn is_enabled(&self, trigger: Trigger) -> bool {
        match trigger {
            Trigger::OutputLimit => self.output_limit,
            Trigger::AfterKill => self.after_kill,
            Trigger::RateLimitWait => self.rate_limit_wait,
        }
    }
    /// The continuation prompt of `trigger`.
    pub fn prompt(&self, trigger: Trigger) -> &str {
        &self.prompts[index(trigger)]
    }
    /// The longest rate-limit wait.
    pub fn max_wait(&self) -> Duration {
        self.max_wait.get()
    }
    /// The margin after a reset.
    pub fn reset_margin(&self) -> Duration {
        self.reset_margin
    }
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
        }
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
    /// The serialisable summary kept in a [`Marker`] and shown in a [`Notice`].
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

/// Why nothing is done.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Skip {
    /// The run ended in a way that is never continued (success, a limit the user set, an
    /// execution error, a refusal, no `result`, …).
    NotATrigger,
    /// An outcome, `terminal_reason`, `subtype` or error we do not recognise: fail closed.
    Unrecognised,
    /// A kill of a kind that is never continued (`ceiling`, `startup`).
    KillKind(KillKind),
    /// The user interrupted the run.
    UserInterrupted,
    /// The account needs credits: waiting will not help.
    CreditsRequired,
    /// A rate-limit stop without a known reset time.
    ResetUnknown,
    /// The reset is further away than `max_wait`.
    WaitTooLong {
        /// When the continuation would have started, epoch ms.
        until_ms: WallMs,
    },
    /// The trigger is turned off.
    Disabled(Trigger),
    /// No session id, or one that is not a UUID: nothing can be resumed safely.
    NoSessionId,
    /// This run was the continuation and ended without hitting a trigger again.
    ContinuationEnded,
    /// The single notice of this chain was already given.
    AlreadyNoticed,
    /// The outcome ended before the marker was made: it is the run the continuation already
    /// answered, seen again (a duplicate event), not the continued run.
    Duplicate,
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::NotATrigger => f.write_str("the outcome is never continued automatically"),
            Skip::Unrecognised => f.write_str("unrecognised outcome: not continued (fail closed)"),
            Skip::KillKind(k) => write!(f, "a {k} kill is never continued"),
            Skip::UserInterrupted => f.write_str("the user interrupted the run"),
            Skip::Duplicate => f.write_str("this run was already continued (a duplicate event)"),
            Skip::CreditsRequired => {
                f.write_str("the account needs credits; waiting will not help")
            }
            Skip::ResetUnknown => f.write_str("rate limited, but the reset time is unknown"),
            Skip::WaitTooLong { until_ms } => write!(
                f,
                "the rate limit resets at {}, later than the maximum wait",
                format_iso_ms(*until_ms)
            ),
            Skip::Disabled(t) => write!(f, "the {t} trigger is off"),
            Skip::NoSessionId => f.write_str("no valid session id to resume"),
            Skip::ContinuationEnded => f.write_str("the continuation ended without a new trigger"),
            Skip::AlreadyNoticed => f.write_str("the notice for this session was already given"),
        }
    }
}

/// A manual way forward, offered in a [`Notice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ManualOption {
    /// Resume the same session by hand with a narrower prompt.
    ResumeNarrower,
    /// Fork the session to try another approach.
    ForkSession,
    /// Start a fresh session.
    StartFresh,
}

impl ManualOption {
    /// Every option, in the order they are offered.
    pub const ALL: [ManualOption; 3] = [
        ManualOption::ResumeNarrower,
        ManualOption::ForkSession,
        ManualOption::StartFresh,
    ];

    /// One line describing the option for `session_id`, with the command to run.
    pub fn describe(self, session_id: &str) -> String {
        match self {
            ManualOption::ResumeNarrower => format!(
                "resume by hand with a narrower prompt: claude --resume {session_id} -p \"<one smaller step>\""
            ),
            ManualOption::ForkSession => format!(
                "try another approach in a fork: claude --resume {session_id} --fork-session -p \"<another approach>\""
            ),
            ManualOption::StartFresh => {
                "start fresh: a new session with a smaller task".to_owned()
            }
        }
    }
}

/// The single notice of a chain whose one continuation also failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The session.
    pub session_id: String,
    /// The trigger that caused the continuation.
    pub trigger: Trigger,
    /// The first run, as recorded in the marker.
    pub first: OutcomeFacts,
    /// What the continued run hit.
    pub again: Trigger,
    /// The continued run.
    pub continued: OutcomeFacts,
    /// The manual options, in order.
    pub options: Vec<ManualOption>,
}

/// A few lines: what happened, both outcomes, the manual options.
impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "session {}: the automatic continuation ({}) stopped again ({}); not continuing again.",
            self.session_id, self.trigger, self.again
        )?;
        writeln!(f, "  first run:     {}", self.first)?;
        writeln!(f, "  continued run: {}", self.continued)?;
        f.write_str("  options:")?;
        for o in &self.options {
            write!(f, "\n  - {}", o.describe(&self.session_id))?;
        }
        Ok(())
    }
}

/// What to do after a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Continue the same session once with `prompt`, after claiming the marker.
    Continue {
        /// Why.
        trigger: Trigger,
        /// The continuation prompt.
        prompt: String,
        /// Start no earlier than this (epoch ms): a rate-limit reset plus the margin.
        wait_until: Option<WallMs>,
    },
    /// The continuation failed too: show this once (after [`Ledger::record_notice`]).
    Notice(Box<Notice>),
    /// Do nothing, for this reason.
    Nothing(Skip),
}

/// What the ledger knows about a session.
#[derive(Debug, Clone, PartialEq)]
pub enum LedgerState {
    /// No marker: the run was the user's own.
    Fresh,
    /// A continuation was claimed: the run was the continuation.
    Continued(Marker),
    /// The continuation failed and the notice was given.
    Noticed(Marker),
}

impl From<Option<LedgerEntry>> for LedgerState {
    fn from(entry: Option<LedgerEntry>) -> Self {
        match entry {
            None => LedgerState::Fresh,
            Some(e) if e.notice_recorded => LedgerState::Noticed(e.marker),
            Some(e) => LedgerState::Continued(e.marker),
        }
    }
}

/// Which trigger, if any, the facts show (ignoring whether it is enabled).
pub fn trigger_of(facts: &TerminalFacts) -> Result<Trigger, Skip> {
    if facts.user_interrupted {
        return Err(Skip::UserInterrupted);
    }
    if facts.credits_required {
        return Err(Skip::CreditsRequired);
    }
    match &facts.outcome {
        Outcome::Success | Outcome::Incomplete | Outcome::NoResult => Err(Skip::NotATrigger),
        Outcome::Killed { kind } => match kind {
            KillKind::Idle | KillKind::NoProgress | KillKind::Linger => Ok(Trigger::AfterKill),
            KillKind::Ceiling | KillKind::Startup => Err(Skip::KillKind(*kind)),
        },
        Outcome::ErrorResult(result) => {
            let ResultFacts {
                subtype,
                terminal_reason,
                stop_reason,
                api_error,
                api_error_status,
                ..
            } = &**result;
            if stop_reason.as_deref() == Some("refusal") {
                return Err(Skip::NotATrigger);
            }
            match subtype.as_deref() {
                Some("error_max_turns" | "error_max_budget_usd" | "error_during_execution") => {
                    return Err(Skip::NotATrigger)
                }
                Some("success") => {}
                _ => return Err(Skip::Unrecognised),
            }
            if terminal_reason.as_deref() != Some("api_error") {
                return Err(Skip::Unrecognised);
            }
            if api_error.as_deref() == Some("max_output_tokens") {
                return Ok(Trigger::OutputLimit);
            }
            if facts.rate_limit_rejected || *api_error_status == Some(429) {
                return match facts.rate_limit_resets_at_ms {
                    Some(_) => Ok(Trigger::RateLimitWait),
                    None => Err(Skip::ResetUnknown),
                };
            }
            Err(Skip::Unrecognised)
        }
    }
}

impl Recovery {
    /// Decide what to do after a run ended. Pure: the same inputs give the same decision.
    pub fn decide(&self, facts: &TerminalFacts, state: &LedgerState) -> Decision {
        match state {
            LedgerState::Noticed(_) => Decision::Nothing(Skip::AlreadyNoticed),
            LedgerState::Continued(marker) if facts.ended_at_ms <= marker.created_at_ms => {
                Decision::Nothing(Skip::Duplicate)
            }
            LedgerState::Continued(marker) => match trigger_of(facts) {
                Ok(again) if self.is_enabled(again) => Decision::Notice(Box::new(Notice {
                    session_id: marker.session_id.clone(),
                    trigger: marker.trigger,
                    first: marker.original.clone(),
                    again,
                    continued: facts.summary(),
                    options: ManualOption::ALL.to_vec(),
                })),
                _ => Decision::Nothing(Skip::ContinuationEnded),
            },
            LedgerState::Fresh => {
                let trigger = match trigger_of(facts) {
                    Ok(t) => t,
                    Err(skip) => return Decision::Nothing(skip),
                };
                if !self.is_enabled(trigger) {
                    return Decision::Nothing(Skip::Disabled(trigger));
                }
                let valid_id = matches!(
                    facts.session_id.as_ref().map(ClaudeSessionId::as_str),
                    Some(id) if validate_session_id(id).is_ok()
                );
                if !valid_id {
                    return Decision::Nothing(Skip::NoSessionId);
                }
                let wait_until = match (trigger, facts.rate_limit_resets_at_ms) {
                    (Trigger::RateLimitWait, Some(reset)) => {
                        let margin = self.reset_margin.as_millis().min(u64::MAX as u128) as u64;
                        let until = reset.saturating_add(margin).max(facts.ended_at_ms);
                        let max = self.max_wait().as_millis().min(u64::MAX as u128) as u64;
                        if until - facts.ended_at_ms > max {
                            return Decision::Nothing(Skip::WaitTooLong { until_ms: until });
                        }
                        Some(until)
                    }
                    (Trigger::RateLimitWait, None) => return Decision::Nothing(Skip::ResetUnknown),
                    _ => None,
                };
                Decision::Continue {
                    trigger,
                    prompt: self.prompt(trigger).to_owned(),
                    wait_until,
                }
            }
        }
    }
}

/// Format version of [`Marker`].
pub const MARKER_VERSION: u32 = 1;

/// The durable record that a session was continued: written before the continuation starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Marker {
    /// Format version ([`MARKER_VERSION`]).
    pub version: u32,
    /// The session that was continued.
    pub session_id: String,
    /// Why.
    pub trigger: Trigger,
    /// When the marker was made, epoch ms.
    pub created_at_ms: WallMs,
    /// The run that triggered the continuation.
    pub original: OutcomeFacts,
    /// The continuation prompt sent.
    pub prompt: String,
    /// When the continuation may start (a rate-limit wait), epoch ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_until_ms: Option<WallMs>,
}

impl Marker {
    /// The marker for a [`Decision::Continue`] about `facts`; `None` for any other decision or
    /// without a session id. Its time is the run's end.
    pub fn for_continue(facts: &TerminalFacts, decision: &Decision) -> Option<Marker> {
        let Decision::Continue {
            trigger,
            prompt,
            wait_until,
        } = decision
        else {
            return None;
        };
        Some(Marker {
            version: MARKER_VERSION,
            session_id: facts.session_id.clone()?.into(),
            trigger: *trigger,
            created_at_ms: facts.ended_at_ms,
            original: facts.summary(),
            prompt: prompt.clone(),
            wait_until_ms: *wait_until,
        })
    }

    /// As one line of JSON.
    pub fn to_json(&self) -> String {
        // A struct of strings and numbers always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Read a marker; a corrupt one is an error, never a default.
    pub fn from_json(text: &str) -> Result<Marker, LedgerError> {
        serde_json::from_str(text).map_err(|e| LedgerError::Corrupt(e.to_string()))
    }
}

/// A ledger failure. Every error means: do **not** continue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The session id is not a UUID; it is never used in a path.
    #[error("invalid session id {0:?}: expected a UUID")]
    InvalidSessionId(String),
    /// The store cannot be read or written.
    #[error("recovery ledger unavailable: {0}")]
    Unavailable(String),
    /// A stored marker cannot be read.
    #[error("recovery marker is corrupt: {0}")]
    Corrupt(String),
}

/// The result of [`Ledger::try_claim`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// This caller wrote the marker: it, and only it, may continue.
    Won,
    /// A marker already existed: never continue.
    AlreadyClaimed,
}

/// What a ledger holds for one session.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerEntry {
    /// The continuation marker.
    pub marker: Marker,
    /// Whether the notice was given.
    pub notice_recorded: bool,
}

/// Durable, race-free continuation markers, keyed by session id.
///
/// Implementations must make `try_claim` atomic and exclusive (exactly one caller among any
/// number of threads and processes gets [`Claim::Won`]) and must validate the session id with
/// [`validate_session_id`] before using it.
pub trait Ledger {
    /// Write `marker` for `session_id` unless one exists.
    fn try_claim(&self, session_id: &str, marker: &Marker) -> Result<Claim, LedgerError>;
    /// The entry of `session_id`, if any.
    fn get(&self, session_id: &str) -> Result<Option<LedgerEntry>, LedgerError>;
    /// Record that the notice was given. `Ok(true)` the first time only; `Ok(false)` if it was
    /// already recorded or there is no marker.
    fn record_notice(&self, session_id: &str) -> Result<bool, LedgerError>;
}

/// A ledger in memory: for tests and for hosts that only need a process-lifetime guard.
#[derive(Debug, Default)]
pub struct MemoryLedger {
    entries: Mutex<HashMap<String, LedgerEntry>>,
}

impl MemoryLedger {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, LedgerEntry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Ledger for MemoryLedger {
    fn try_claim(&self, session_id: &str, marker: &Marker) -> Result<Claim, LedgerError> {
        validate_session_id(session_id)?;
        let mut m = self.lock();
        if m.contains_key(session_id) {
            return Ok(Claim::AlreadyClaimed);
        }
        m.insert(
            session_id.to_owned(),
            LedgerEntry {
                marker: marker.clone(),
                notice_recorded: false,
            },
        );
        Ok(Claim::Won)
    }

    fn get(&self, session_id: &str) -> Result<Option<LedgerEntry>, LedgerError> {
        validate_session_id(session_id)?;
        Ok(self.lock().get(session_id).cloned())
    }

    fn record_notice(&self, session_id: &str) -> Result<bool, LedgerError> {
        validate_session_id(session_id)?;
        Ok(match self.lock().get_mut(session_id) {
            Some(e) if !e.notice_recorded => {
                e.notice_recorded = true;
                true
            }
            _ => false,
        })
    }
}

/// Check that `id` is a UUID in the canonical `8-4-4-4-12` hex form (as Claude Code writes
/// session ids), so it is safe in a file name.
///
/// ```
/// use watchdog_core::recovery::validate_session_id;
/// assert!(validate_session_id("90455ab9-05b5-4ba0-9d10-01a53fd0bcdc").is_ok());
/// assert!(validate_session_id("../../etc/passwd").is_err());
/// ```
pub fn validate_session_id(id: &str) -> Result<(), LedgerError> {
    let ok = id.len() == 36
        && id.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        });
    if ok {
        Ok(())
    } else {
        Err(LedgerError::InvalidSessionId(id.chars().take(64).collect()))
    }
}

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
//! agent id): see [Subagents](#subagents).
//!
//! ```
//! use watchdog_core::recovery::*;
//! use watchdog_core::{facts::ClaudeSessionId, Outcome, facts::ResultFacts};
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
//!
//! # Subagents
//!
//! The subagent trigger: continue a Claude Code subagent cut off by the output token limit
//! **once**, then stop (the `dsh-subagent-watchdog` contract on Claude Code).
//!
//! Pure and sans-IO, like the rest of this module. A host (the `agent-watchdog hook`
//! command, or any Rust program) reads how a subagent ended from its transcript
//! ([`SubagentEnd::from_transcript`]), asks the durable ledger what it knows about that agent
//! ([`LedgerState`]`<`[`SubagentMarker`]`>`, keyed by [`SubagentKey`]: session id + agent id),
//! and gets a [`SubagentDecision`] from [`Recovery::decide_subagent`]:
//!
//! | how the agent ended | ledger | decision |
//! |---|---|---|
//! | the output limit ([`SubagentEnd::OutputLimit`]), a continuable type | no marker | **continue once**: claim the marker, then tell the parent to `SendMessage` that agent |
//! | the output limit, one-shot type (`Explore`, `Plan`) or unknown type | no marker | nothing ([`SubagentSkip::OneShot`], [`SubagentSkip::TypeUnknown`]) |
//! | the same failure the marker was made for (a duplicate event, a restart, `--resume`; failures are told apart by their ordinal, [`TranscriptEnd::failure_id`]) | marker | nothing ([`SubagentSkip::Duplicate`]) |
//! | a later output-limit or API error failure | marker | **one notice** with the facts and the manual options |
//! | completed, refused, aborted, running, another API error, unknown | no marker | nothing ([`SubagentSkip::NotATrigger`]) |
//! | completed, or anything that is not a failure | marker | nothing ([`SubagentSkip::ContinuationEnded`]) |
//! | anything | notice given | nothing ([`SubagentSkip::AlreadyNoticed`]) |
//!
//! The output-limit trigger of the policy ([`Trigger::OutputLimit`]) switches this one too: a
//! policy with it off never continues a subagent ([`SubagentSkip::Disabled`]).
//!
//! # The host's protocol
//!
//! 1. `state = LedgerState::from(ledger.get(&key)?)`; `decision = recovery.decide_subagent(&facts, &state)`.
//! 2. On [`SubagentDecision::Continue`]: [`SubagentMarker::for_continue`], then
//!    `ledger.try_claim(&key, &marker)`; only on [`Claim::Won`] tell the parent.
//! 3. On [`SubagentDecision::Notice`]: `ledger.record_notice(&key)`; show the notice only when it
//!    returns `Ok(true)`.
//!
//! Any error means: do nothing (fail closed).
//!
//! ```
//! use watchdog_core::recovery::*;
//!
//! let session = "b042aa30-1f9b-40da-b416-11c34370df5c";
//! let key = SubagentKey::new(session, "a02f401cf8728967a").unwrap();
//! let ledger = MemoryLedger::<SubagentKey, SubagentMarker>::default();
//! let recovery = Recovery::default();
//! let cut_off = |failure: &str| SubagentFacts {
//!     key: key.clone(),
//!     agent_type: Some("general-purpose".into()),
//!     end: SubagentEnd::OutputLimit,
//!     failure_id: Some(failure.into()),
//!     error: None,
//!     seen_at_ms: 1_000,
//! };
//!
//! // First cut-off: continue once.
//! let facts = cut_off("failure-1");
//! let decision = recovery.decide_subagent(&facts, &ledger.get(&key).unwrap().into());
//! assert!(matches!(decision, SubagentDecision::Continue { .. }));
//! let marker = SubagentMarker::for_continue(&facts, &decision).unwrap();
//! assert_eq!(ledger.try_claim(&key, &marker).unwrap(), Claim::Won);
//!
//! // The same failure seen again (Stop after PostToolUseFailure, a resume): nothing.
//! let again = recovery.decide_subagent(&facts, &ledger.get(&key).unwrap().into());
//! assert_eq!(again, SubagentDecision::Nothing(SubagentSkip::Duplicate));
//!
//! // The continued agent is cut off again: one notice, then nothing.
//! let second = cut_off("failure-2");
//! let decision = recovery.decide_subagent(&second, &ledger.get(&key).unwrap().into());
//! assert!(matches!(decision, SubagentDecision::Notice(_)));
//! assert!(ledger.record_notice(&key).unwrap());
//! let decision = recovery.decide_subagent(&second, &ledger.get(&key).unwrap().into());
//! assert_eq!(decision, SubagentDecision::Nothing(SubagentSkip::AlreadyNoticed));
//! ```

mod subagent;

mod decision;
mod facts;
mod ledger;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{defaults, ConfigError, IntoValid, PositiveDuration};

pub use decision::{trigger_of, Decision, ManualOption, Notice, Skip};
pub use facts::{ChainRole, OutcomeFacts, TerminalFacts};
pub use ledger::{
    validate_session_id, Claim, Ledger, LedgerEntry, LedgerError, LedgerState, Marker,
    MemoryLedger, MARKER_VERSION,
};
pub use subagent::{
    continue_instruction, SubagentDecision, SubagentEnd, SubagentFacts, SubagentKey,
    SubagentMarker, SubagentNotice, SubagentSkip, TranscriptEnd,
};

/// What made a run worth continuing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
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
pub(crate) const OUTPUT_LIMIT_PROMPT: &str =
    "Your previous reply hit the output token limit before \
the task was finished. Continue the unfinished task from where it stopped, in smaller pieces, \
without recap.";
/// Default continuation prompt after a watchdog kill.
pub(crate) const AFTER_KILL_PROMPT: &str =
    "The previous run was stopped because it stopped making \
progress. Continue the unfinished task from where it stopped, without recap.";
/// Default continuation prompt after a rate-limit wait.
pub(crate) const RATE_LIMIT_PROMPT: &str =
    "The rate limit has reset. Continue the unfinished task \
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
/// | prompts | one per trigger ([`Recovery::prompt`]) | the continuation prompt of each trigger; non-empty |
/// | `max_wait` | 6h | a reset further away than this is not waited for; > 0 |
/// | `reset_margin` | 30s | added to the reset time before continuing |
///
/// Every row, checked against `Recovery::default()`:
///
/// ```
/// use std::time::Duration;
/// use watchdog_core::recovery::*;
/// let d = Recovery::default();
/// assert!(d.is_enabled(Trigger::OutputLimit));
/// assert!(!d.is_enabled(Trigger::AfterKill));
/// assert!(!d.is_enabled(Trigger::RateLimitWait));
/// assert!(d.prompt(Trigger::OutputLimit).starts_with("Your previous reply hit the output token limit"));
/// assert!(d.prompt(Trigger::AfterKill).starts_with("The previous run was stopped"));
/// assert!(d.prompt(Trigger::RateLimitWait).starts_with("The rate limit has reset."));
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
    /// The longest wait for a rate-limit reset, already valid by its type: cannot fail
    /// ([`Recovery::with_max_wait`] checks a raw value first).
    ///
    /// ```
    /// use watchdog_core::config::PositiveDuration;
    /// use watchdog_core::recovery::Recovery;
    /// let mut r = Recovery::default();
    /// r.set_max_wait("1h".parse::<PositiveDuration>().unwrap());
    /// assert_eq!(r.max_wait().as_secs(), 3600);
    /// ```
    pub fn set_max_wait(&mut self, max_wait: PositiveDuration) -> &mut Self {
        self.max_wait = max_wait;
        self
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

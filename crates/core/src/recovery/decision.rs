//! The decision: which trigger the facts show, and what to do given the ledger's state.

use std::fmt;

use crate::event::{KillKind, Outcome};
use crate::facts::{ClaudeSessionId, ResultFacts};
use crate::wall::{format_iso_ms, WallMs};

use super::{
    validate_session_id, ChainRole, LedgerState, Marker, OutcomeFacts, Recovery, TerminalFacts,
    Trigger, MARKER_VERSION,
};

/// Why nothing is done.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Skip {
    /// The run ended in a way that is never continued (success, a limit the user set, an
    /// execution error, a refusal, no `result`, …).
    NotATrigger,
    /// An outcome, `terminal_reason`, `subtype` or error we do not recognise: fail closed.
    Unrecognised,
    /// A kill of a kind that is never continued (`ceiling`, `startup`, `output_blocked`,
    /// `memory`: the session would grow again).
    KillKind(KillKind),
    /// The kill came while Claude Code was retrying the API after announced back-offs
    /// (`system/api_retry`): the API was failing (overloaded, rate limited), and a resume now
    /// would go straight back into the same storm.
    DuringBackoff {
        /// Retries announced in the storm.
        attempts: u32,
        /// The last one's HTTP status, if given.
        status: Option<u16>,
        /// The last one's `error`, if given.
        error: Option<String>,
    },
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
    /// Another run continued this session (it made the marker): this run is not that
    /// continuation, so it neither continues nor gives the notice.
    ContinuedElsewhere,
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::NotATrigger => f.write_str("the outcome is never continued automatically"),
            Skip::Unrecognised => f.write_str("unrecognised outcome: not continued (fail closed)"),
            Skip::KillKind(k) => write!(f, "a {k} kill is never continued"),
            Skip::DuringBackoff {
                attempts,
                status,
                error,
            } => {
                let plural = if *attempts == 1 { "" } else { "s" };
                write!(
                    f,
                    "the kill came while Claude Code was retrying the API ({attempts} announced \
                     retr{}",
                    if plural.is_empty() { "y" } else { "ies" }
                )?;
                match (status, error) {
                    (Some(s), Some(e)) => write!(f, ", last: {s} {e}")?,
                    (Some(s), None) => write!(f, ", last: HTTP {s}")?,
                    (None, Some(e)) => write!(f, ", last: {e}")?,
                    (None, None) => {}
                }
                f.write_str(
                    "): a resume now would go straight back into the same overload; resume \
                     by hand once the API answers again",
                )
            }
            Skip::UserInterrupted => f.write_str("the user interrupted the run"),
            Skip::Duplicate => f.write_str("this run was already continued (a duplicate event)"),
            Skip::ContinuedElsewhere => {
                f.write_str("another run already continued this session (the marker exists)")
            }
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
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
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
    /// The continuation failed too: show this once (after [`Ledger::record_notice`](super::Ledger::record_notice)).
    Notice(Box<Notice>),
    /// Do nothing, for this reason.
    Nothing(Skip),
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
            // A lost background task is a hang like the others: the continuation's new turn
            // can look again.
            KillKind::Idle | KillKind::NoProgress | KillKind::Linger | KillKind::TaskSilent => {
                match &facts.backoff {
                    Some(b) => Err(Skip::DuringBackoff {
                        attempts: b.attempts,
                        status: b.status,
                        error: b.error.clone(),
                    }),
                    None => Ok(Trigger::AfterKill),
                }
            }
            // A wakeup that never fired or a host request never answered: a continuation
            // brings neither back.
            _ => Err(Skip::KillKind(*kind)),
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
    /// What is decided before the ledger is read: the skip when the run is not continued
    /// whatever the ledger holds (no trigger, the trigger turned off, no session id that can
    /// be resumed safely), else the trigger and the session to read the ledger for. A host
    /// reads the ledger (and asks [`Recovery::decide`]) only for an `Ok`.
    pub fn before_ledger(&self, facts: &TerminalFacts) -> Result<(Trigger, ClaudeSessionId), Skip> {
        let trigger = trigger_of(facts)?;
        if !self.is_enabled(trigger) {
            return Err(Skip::Disabled(trigger));
        }
        match &facts.session_id {
            Some(id) if validate_session_id(id.as_str()).is_ok() => Ok((trigger, id.clone())),
            _ => Err(Skip::NoSessionId),
        }
    }

    /// Whether a host tells its user about `skip`: a trigger was seen but nothing will be done
    /// (no reset time, a wait too long, credits needed, no session id, continued by another
    /// run), or a kill came during an API back-off when kills are continued.
    pub fn worth_saying(&self, skip: &Skip) -> bool {
        match skip {
            Skip::ResetUnknown
            | Skip::WaitTooLong { .. }
            | Skip::CreditsRequired
            | Skip::NoSessionId
            | Skip::ContinuedElsewhere => true,
            Skip::DuringBackoff { .. } => self.is_enabled(Trigger::AfterKill),
            _ => false,
        }
    }

    /// Decide what to do after a run ended. Pure: the same inputs give the same decision.
    pub fn decide(&self, facts: &TerminalFacts, state: &LedgerState) -> Decision {
        match state {
            LedgerState::Noticed(_) => Decision::Nothing(Skip::AlreadyNoticed),
            LedgerState::Continued(_) if facts.role == ChainRole::First => {
                Decision::Nothing(Skip::ContinuedElsewhere)
            }
            LedgerState::Continued(marker)
                if facts.role == ChainRole::Unknown
                    && facts.ended_at_ms <= marker.created_at_ms =>
            {
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
                let trigger = match self.before_ledger(facts) {
                    Ok((trigger, _)) => trigger,
                    Err(skip) => return Decision::Nothing(skip),
                };
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
}

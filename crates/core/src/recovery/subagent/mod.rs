//! The subagent trigger (described in [`crate::recovery`]).

mod ledger;
mod transcript;

use std::fmt;

use super::{validate_session_id, LedgerError, LedgerState, Recovery, Trigger};
use crate::wall::WallMs;

pub use ledger::SubagentMarker;
pub use transcript::{SubagentEnd, TranscriptEnd};

/// Agent types Claude Code runs once and never lets the parent message again
/// (`Explore`, `Plan`): never continued.
pub(crate) const ONE_SHOT_AGENT_TYPES: &[&str] = &["Explore", "Plan"];

/// The message the parent sends to the cut-off agent.
pub(crate) const SUBAGENT_CONTINUE_MESSAGE: &str = "You stopped at the output token limit before \
finishing. Continue the unfinished task from where you stopped, in smaller pieces, without \
recap.";

/// Format version of [`SubagentMarker`].
pub(crate) const SUBAGENT_MARKER_VERSION: u32 = 1;

/// Check that `id` is a plausible Claude Code agent id (`a` + 16 hex digits today): 1 to 64 ASCII
/// letters, digits, `-` or `_`, so it is safe in a file name.
pub(crate) fn validate_agent_id(id: &str) -> Result<(), LedgerError> {
    let ok = (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(LedgerError::InvalidSessionId(format!(
            "agent id {}",
            id.chars().take(64).collect::<String>()
        )))
    }
}

/// The key of a subagent's marker: the session id (a UUID) plus the agent id, both validated.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SubagentKey {
    session_id: String,
    agent_id: String,
}

impl SubagentKey {
    /// A key, if both ids are valid ([`validate_session_id`]; an agent id is 1 to 64 ASCII letters,
    /// digits, `-` or `_`).
    pub fn new(session_id: &str, agent_id: &str) -> Result<SubagentKey, LedgerError> {
        validate_session_id(session_id)?;
        validate_agent_id(agent_id)?;
        Ok(SubagentKey {
            session_id: session_id.to_ascii_lowercase(),
            agent_id: agent_id.to_owned(),
        })
    }
    /// The session id (lower case).
    pub fn session_id(&self) -> &str {
        &self.session_id
    }
    /// The agent id.
    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }
    /// The marker's file name: `<session id>.<agent id>.json`.
    pub fn file_name(&self) -> String {
        format!("{}.{}.json", self.session_id, self.agent_id)
    }
}

impl fmt::Display for SubagentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.session_id, self.agent_id)
    }
}

/// How one subagent ended, with everything the decision needs.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentFacts {
    /// Session id + agent id.
    pub key: SubagentKey,
    /// The agent type (`general-purpose`, `Explore`, a custom agent's name), if known.
    pub agent_type: Option<String>,
    /// How its transcript ends.
    pub end: SubagentEnd,
    /// The `uuid` of the entry that ended it.
    pub failure_id: Option<String>,
    /// The error text, if any.
    pub error: Option<String>,
    /// When this was observed, epoch ms.
    pub seen_at_ms: WallMs,
}

/// Why nothing is done for a subagent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubagentSkip {
    /// It did not end on the output limit (completed, refused, aborted, running, another API
    /// error, unknown): never recovered automatically.
    NotATrigger(&'static str),
    /// A one-shot agent type: Claude Code offers no way to continue it.
    OneShot(String),
    /// Its type is unknown, so whether it can be continued cannot be verified.
    TypeUnknown,
    /// The output-limit trigger is off.
    Disabled,
    /// The failure the marker was made for, seen again (or one that cannot be told apart).
    Duplicate,
    /// The continued agent ended without failing again.
    ContinuationEnded,
    /// The single notice was already given.
    AlreadyNoticed,
}

impl fmt::Display for SubagentSkip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubagentSkip::NotATrigger(end) => {
                write!(f, "the agent ended {end}: never continued automatically")
            }
            SubagentSkip::OneShot(t) => write!(f, "{t} agents are one-shot: never continued"),
            SubagentSkip::TypeUnknown => {
                f.write_str("the agent type is unknown: cannot verify it can be continued")
            }
            SubagentSkip::Disabled => f.write_str("the output_limit trigger is off"),
            SubagentSkip::Duplicate => f.write_str("this failure was already continued"),
            SubagentSkip::ContinuationEnded => {
                f.write_str("the continued agent ended without failing again")
            }
            SubagentSkip::AlreadyNoticed => {
                f.write_str("the notice for this agent was already given")
            }
        }
    }
}

/// The single notice for a continued agent that failed again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubagentNotice {
    /// Session + agent.
    pub key: SubagentKey,
    /// The agent type.
    pub agent_type: Option<String>,
    /// The first failure (from the marker).
    pub first_error: Option<String>,
    /// How the continued agent ended.
    pub again: SubagentEnd,
    /// The second failure's error text.
    pub again_error: Option<String>,
}

/// A short paragraph for the parent: the facts, then the manual options. It never asks for a
/// continuation itself.
impl fmt::Display for SubagentNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let agent = self.key.agent_id();
        let kind = self.agent_type.as_deref().unwrap_or("unknown type");
        let why = match &self.again {
            SubagentEnd::OutputLimit => "the output token limit".to_owned(),
            SubagentEnd::ApiError(e) => format!("an API error ({e})"),
            other => other.as_str().to_owned(),
        };
        write!(
            f,
            "agent-watchdog notice: subagent {agent} ({kind}) stopped at the output token limit, \
             was continued once automatically, and stopped again on {why}. It will not be \
             continued automatically again."
        )?;
        if let Some(e) = &self.first_error {
            write!(f, " First failure: {e}")?;
        }
        if let Some(e) = &self.again_error {
            write!(f, " Second failure: {e}")?;
        }
        write!(
            f,
            " Its work is unfinished. Options: send it a narrower instruction yourself with \
             SendMessage (agent id {agent}); stop it with TaskStop; or delegate a fresh \
             subagent with a smaller task. Tell the user which you chose."
        )
    }
}

/// What to do about one subagent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubagentDecision {
    /// Claim the marker, then tell the parent to send `message` to the agent.
    Continue {
        /// The message for the agent.
        message: String,
    },
    /// The continued agent failed again: give this once (after
    /// [`Ledger::record_notice`](crate::recovery::Ledger::record_notice)).
    Notice(Box<SubagentNotice>),
    /// Do nothing, for this reason.
    Nothing(SubagentSkip),
}

impl Recovery {
    /// Decide what to do about a subagent that ended as `facts` says. Pure.
    pub fn decide_subagent(
        &self,
        facts: &SubagentFacts,
        state: &LedgerState<SubagentMarker>,
    ) -> SubagentDecision {
        match state {
            LedgerState::Noticed(_) => SubagentDecision::Nothing(SubagentSkip::AlreadyNoticed),
            LedgerState::Continued(marker) => {
                let same = match (&facts.failure_id, &marker.failure_id) {
                    (Some(now), Some(then)) => now == then,
                    // Without ids a later failure cannot be told from the first: stay silent.
                    _ => true,
                };
                if !facts.end.is_failure() {
                    SubagentDecision::Nothing(SubagentSkip::ContinuationEnded)
                } else if same {
                    SubagentDecision::Nothing(SubagentSkip::Duplicate)
                } else {
                    SubagentDecision::Notice(Box::new(SubagentNotice {
                        key: facts.key.clone(),
                        agent_type: facts.agent_type.clone().or(marker.agent_type.clone()),
                        first_error: marker.error.clone(),
                        again: facts.end.clone(),
                        again_error: facts.error.clone(),
                    }))
                }
            }
            LedgerState::Fresh => {
                if facts.end != SubagentEnd::OutputLimit {
                    return SubagentDecision::Nothing(SubagentSkip::NotATrigger(
                        facts.end.as_str(),
                    ));
                }
                if !self.is_enabled(Trigger::OutputLimit) {
                    return SubagentDecision::Nothing(SubagentSkip::Disabled);
                }
                match facts.agent_type.as_deref() {
                    None | Some("") => SubagentDecision::Nothing(SubagentSkip::TypeUnknown),
                    Some(t) if ONE_SHOT_AGENT_TYPES.contains(&t) => {
                        SubagentDecision::Nothing(SubagentSkip::OneShot(t.to_owned()))
                    }
                    Some(_) => SubagentDecision::Continue {
                        message: SUBAGENT_CONTINUE_MESSAGE.to_owned(),
                    },
                }
            }
        }
    }
}

/// The instruction to the parent for a [`SubagentDecision::Continue`]: continue exactly this
/// agent, once, with `SendMessage` (loaded through `ToolSearch` when deferred).
pub fn continue_instruction(key: &SubagentKey, agent_type: Option<&str>, message: &str) -> String {
    let call = serde_json::json!({
        "to": key.agent_id(),
        "message": message,
        "summary": "continue after the output limit",
    });
    format!(
        "agent-watchdog: subagent {} ({}) stopped at the output token limit before finishing \
         its task. Continue exactly that agent once, from its existing state: if SendMessage is \
         not loaded, load it with ToolSearch (query \"select:SendMessage\"), then call \
         SendMessage with {call}. Do not start a new agent for this task and do not redo its \
         work yourself.",
        key.agent_id(),
        agent_type.unwrap_or("unknown type"),
    )
}

impl SubagentMarker {
    /// The marker for a [`SubagentDecision::Continue`] about `facts`; `None` for any other
    /// decision.
    pub fn for_continue(facts: &SubagentFacts, decision: &SubagentDecision) -> Option<Self> {
        let SubagentDecision::Continue { message } = decision else {
            return None;
        };
        Some(SubagentMarker {
            version: SUBAGENT_MARKER_VERSION,
            session_id: facts.key.session_id.clone(),
            agent_id: facts.key.agent_id.clone(),
            agent_type: facts.agent_type.clone(),
            failure_id: facts.failure_id.clone(),
            error: facts.error.clone(),
            created_at_ms: facts.seen_at_ms,
            message: message.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_ids_are_safe_in_a_file_name() {
        assert!(validate_agent_id("a02f401cf8728967a").is_ok());
        assert!(validate_agent_id("../x").is_err());
        assert!(validate_agent_id("").is_err());
        assert!(validate_agent_id(&"a".repeat(65)).is_err());
    }
}

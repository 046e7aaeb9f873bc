//! One subagent, one decision: read how it ended, ask the ledger, claim, and say what the parent
//! must hear (the continuation instruction or the single notice), or nothing.

use watchdog_core::recovery::{
    continue_instruction, SubagentDecision, SubagentFacts, SubagentKey, SubagentMarker,
};
use watchdog_core::recovery::{Claim, Ledger, LedgerState, Recovery};

use super::session_files::SubagentFiles;

/// What the hook tells the parent about one agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// Continue it once (the instruction).
    Continue(String),
    /// It failed again (the notice).
    Notice(String),
}

impl Said {
    /// The text for the parent.
    pub fn text(&self) -> &str {
        match self {
            Said::Continue(t) | Said::Notice(t) => t,
        }
    }
}

/// Where the ledger comes from: opened only when first needed.
pub trait LedgerSource {
    /// The ledger type.
    type Ledger: Ledger<SubagentKey, SubagentMarker>;
    /// The ledger, opened on first use.
    fn ledger(&mut self) -> Result<&Self::Ledger, String>;
}

/// Decide about `agent_id` of `session_id` and act on the ledger; `Ok(None)`: nothing to say.
/// `reported_error`: the failure Claude Code reported for it (`PostToolUseFailure`), if any.
/// The ledger is opened only when the agent ended in a failure (so a healthy session never
/// touches the state directory). Every error means: nothing is said about this agent.
pub fn consider<S: LedgerSource>(
    recovery: &Recovery,
    files: &SubagentFiles,
    source: &mut S,
    session_id: &str,
    agent_id: &str,
    reported_error: Option<&str>,
    now_ms: u64,
) -> Result<Option<Said>, String> {
    let key = SubagentKey::new(session_id, agent_id).map_err(|e| e.to_string())?;
    let end = files
        .end(agent_id, reported_error)
        .map_err(|e| e.to_string())?;
    if !end.end.is_failure() {
        // Never a trigger, and never the second failure: nothing to look up.
        return Ok(None);
    }
    let meta = files.meta(agent_id).map_err(|e| e.to_string())?;
    let agent_type = meta.and_then(|m| m.agent_type).or(end.agent_type);
    let facts = SubagentFacts {
        key: key.clone(),
        agent_type,
        end: end.end,
        failure_id: end.failure_id,
        error: end.error,
        seen_at_ms: now_ms,
    };
    let ledger = source.ledger()?;
    let state = LedgerState::from(ledger.get(&key).map_err(|e| e.to_string())?);
    let decision = recovery.decide_subagent(&facts, &state);
    match &decision {
        SubagentDecision::Continue { message } => {
            let Some(marker) = SubagentMarker::for_continue(&facts, &decision) else {
                return Ok(None);
            };
            match ledger.try_claim(&key, &marker).map_err(|e| e.to_string())? {
                Claim::Won => Ok(Some(Said::Continue(continue_instruction(
                    &key,
                    facts.agent_type.as_deref(),
                    message,
                )))),
                Claim::AlreadyClaimed => Ok(None),
            }
        }
        SubagentDecision::Notice(notice) => {
            if ledger.record_notice(&key).map_err(|e| e.to_string())? {
                Ok(Some(Said::Notice(notice.to_string())))
            } else {
                Ok(None)
            }
        }
        // Nothing, or a decision this build does not know: say nothing.
        _ => Ok(None),
    }
}

//! Quiet spells: what each silence in a session was, and how the session ended.
//!
//! A **quiet spell** is the time between two consecutive *progress* entries (every timing entry
//! except keep-alives, see [`EntryKind::is_progress`]): exactly what the no-progress clock sees.
//! Its `quiet_ms` is the longest gap between *any* two entries inside it (keep-alives included):
//! what the idle clock sees. Without keep-alives the two are equal.
//!
//! Every spell is the core's classifier's ([`SpellTracker`], the one a live run uses), fed
//! each entry with what a reader of the whole file knows besides. Its kind is decided by the
//! state when it began and the entry that ended it:
//!
//! | kind | when |
//! |---|---|
//! | `after_result` | the previous turn had ended with a final answer |
//! | `human` | a tool call whose permission a person answered (`permissionDecision.source: "user"`), an `AskUserQuestion` call, a capture's `can_use_tool` / `requires_action` wait, or a spell ended by a person's prompt (a queued prompt, or a typed one not just queued) |
//! | `tool` | a tool call was pending (the tool is the one whose result ended the spell, else the latest pending) |
//! | `model` | otherwise: waiting on the model |
//!
//! A spell is **productive** when it is a `model` or `tool` spell that more work followed (the
//! entry that ended it is not a user's interrupt, nor followed by one). `human` and
//! `after_result` spells are never productive silences: the watchdog pauses its clocks during a
//! human wait, and after a result only the linger limit applies.
//!
//! # How a session ended (transcripts have no `result` line)
//! An assistant message without tool calls and not stopped on `tool_use` is a **final answer**
//! when the next entry that is not a keep-alive, `system` line or subagent activity is a
//! person's prompt, or when nothing follows: that is where the CLI prints its `result`. The
//! session's ending is that of its last turn: `result`; `error` for an API error message written
//! in the assistant's place; `max_tokens` for a final answer stopped on the output token limit
//! (or an API error about it); `interrupted` when the user interrupted the last turn; `no_result`
//! when the last turn has no final answer (e.g. the process died during a tool call). Captures
//! carry real `result` lines (and `incomplete`, a success stopped on `tool_use`).
//!
//! # Runs
//! A person's prompt after a final answer starts a new **run** (in print mode, a new process:
//! `--resume`/`--continue`). The simulation supervises each run separately.

use std::sync::Arc;
use std::time::{Duration, Instant};

use watchdog_core::facts::{asks_a_person, PendingTool, ProgressLine, SpellTracker};

use super::transcript::{Ending, Entry, EntryKind, Format, Stop};

/// What a quiet spell was: the core's, whose classifier ([`watchdog_core::facts::SpellTracker`])
/// decides every spell, live or back-filled.
pub use watchdog_core::facts::SpellKind;

/// One quiet spell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spell {
    /// What it was.
    pub kind: SpellKind,
    /// The tool, for `tool` (and tool-related `human`) spells.
    pub tool: Option<Box<str>>,
    /// Start, in ms since the session's first entry.
    pub start_ms: u64,
    /// Length (no progress), ms.
    pub ms: u64,
    /// Longest gap between any two entries inside it (no line at all), ms.
    pub quiet_ms: u64,
    /// Followed by more work (see the module docs).
    pub productive: bool,
}

/// The analysis of one session.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// Its quiet spells, in order.
    pub spells: Vec<Spell>,
    /// How it ended.
    pub ending: Option<Ending>,
    /// Index of each entry that settles the session (a final answer or a `result`), with how.
    pub settles: Vec<(usize, Ending)>,
    /// Entry indexes where a new run starts (the first is 0).
    pub run_starts: Vec<usize>,
    /// Tool ids whose call waited on a person.
    pub human_tools: Vec<Box<str>>,
}

/// Whether an entry is a person's prompt (a queued prompt, or a typed one).
fn is_human_prompt(k: &EntryKind) -> bool {
    matches!(
        k,
        EntryKind::Enqueue | EntryKind::Prompt { human: true, .. }
    )
}

fn is_interrupt(k: &EntryKind) -> bool {
    matches!(
        k,
        EntryKind::Prompt {
            interrupt: true,
            ..
        }
    )
}

fn settle_ending(k: &EntryKind) -> Option<Ending> {
    match k {
        EntryKind::Result(e) => Some(*e),
        EntryKind::Assistant {
            tools,
            stop,
            api_error,
            max_tokens_error,
        } if tools.is_empty() && *stop != Stop::ToolUse => Some(if *max_tokens_error {
            Ending::MaxTokens
        } else if *api_error {
            Ending::Error
        } else if *stop == Stop::MaxTokens {
            Ending::MaxTokens
        } else {
            Ending::Result
        }),
        _ => None,
    }
}

/// A pending call `(id, name)`, with whether a person answered its permission.
fn pending_tool<'e>(human_tools: &[Box<str>], (id, name): (&str, &'e Arc<str>)) -> PendingTool<'e> {
    PendingTool {
        name,
        person_answered: human_tools.iter().any(|h| &**h == id),
    }
}

/// Analyse one session's entries: its spells are the core's [`SpellTracker`]'s, fed each
/// entry in virtual time (one base instant plus the entry's offset) with what a reader of the
/// whole file knows besides (which calls a person answered, a person's prompt, an interrupt).
pub fn analyse<'e>(format: Format, entries: &'e [Entry]) -> Analysis {
    let mut a = Analysis::default();
    // Which entries settle: captures have `result` lines; transcripts need a look-ahead.
    let mut settles = vec![None; entries.len()];
    match format {
        Format::Capture => {
            for (i, e) in entries.iter().enumerate() {
                if let EntryKind::Result(end) = e.kind {
                    settles[i] = Some(end);
                }
            }
        }
        Format::Transcript => {
            // Backwards: is the next significant entry a person's prompt (or nothing)?
            let mut next_is_prompt_or_end = true;
            for i in (0..entries.len()).rev() {
                let k = &entries[i].kind;
                if let EntryKind::Assistant { .. } = k {
                    if next_is_prompt_or_end {
                        settles[i] = settle_ending(k);
                    }
                }
                match k {
                    EntryKind::KeepAlive
                    | EntryKind::System { .. }
                    | EntryKind::SubagentProgress
                    | EntryKind::HumanWaitStart
                    | EntryKind::HumanWaitEnd => {}
                    k => next_is_prompt_or_end = is_human_prompt(k),
                }
            }
        }
    }
    // Which tool calls waited on a person.
    let mut ask_ids: Vec<&str> = Vec::new();
    for e in entries {
        match &e.kind {
            EntryKind::Assistant { tools, .. } => {
                for t in tools.iter().filter(|t| asks_a_person(&t.name)) {
                    ask_ids.push(&t.id);
                }
            }
            EntryKind::ToolResults { ids, human: true } => {
                a.human_tools.extend(ids.iter().cloned())
            }
            _ => {}
        }
    }
    a.human_tools.extend(ask_ids.into_iter().map(Box::from));

    let Some(first) = entries.first() else {
        return a;
    };
    // Spell starts are measured from spawn for captures, from the first entry for transcripts.
    let t0 = if format == Format::Capture {
        0
    } else {
        first.t
    };
    let base = Instant::now();
    let at = |t: i64| base + Duration::from_millis((t - first.t).max(0) as u64);
    let mut spells = SpellTracker::default();
    let mut pending: Vec<(&str, &'e Arc<str>)> = Vec::new();
    let mut human_wait = false;
    let mut last_work: Option<usize> = None;
    let mut ending = Ending::NoResult;
    a.run_starts.push(0);
    for (i, e) in entries.iter().enumerate() {
        let now = at(e.t);
        spells.line(now);
        match &e.kind {
            EntryKind::HumanWaitStart => {
                human_wait = true;
                spells.human_wait();
            }
            EntryKind::HumanWaitEnd => human_wait = false,
            _ => {}
        }
        if !e.kind.is_progress() {
            continue;
        }
        let tool = |call: &(&str, &'e Arc<str>)| pending_tool(&a.human_tools, *call);
        let answered = match &e.kind {
            EntryKind::ToolResults { ids, .. } => pending
                .iter()
                .find(|(id, _)| ids.iter().any(|x| &**x == *id)),
            _ => None,
        };
        let after_enqueue =
            last_work.is_some_and(|p| matches!(entries[p].kind, EntryKind::Enqueue));
        let interrupted = is_interrupt(&e.kind)
            || entries[i + 1..]
                .iter()
                .find(|n| n.kind.is_progress())
                .is_some_and(|n| is_interrupt(&n.kind));
        let was_settled = spells.settled();
        let spell = spells.progress(
            now,
            ProgressLine {
                waiting_on_person: human_wait,
                last_pending: pending.last().map(tool),
                answered: answered.map(tool),
                by_person: matches!(e.kind, EntryKind::Enqueue)
                    || (is_human_prompt(&e.kind) && !after_enqueue),
                interrupted,
                settles: settles[i].is_some(),
                // A transcript's `system` entries and a subagent's activity leave a settled
                // session settled.
                top_level: matches!(
                    e.kind,
                    EntryKind::Assistant { .. }
                        | EntryKind::ToolResults { .. }
                        | EntryKind::Prompt { .. }
                        | EntryKind::Enqueue
                        | EntryKind::Progress
                ),
            },
        );
        if let Some(s) = spell {
            let started = first.t + s.started.duration_since(base).as_millis() as i64;
            a.spells.push(Spell {
                kind: s.kind,
                tool: s.tool.map(|t| Box::from(&*t)),
                start_ms: (started - t0).max(0) as u64,
                ms: s.length.as_millis() as u64,
                quiet_ms: s.quiet.as_millis() as u64,
                productive: s.productive,
            });
        }
        // A person's prompt after a final answer starts a new run.
        if was_settled && is_human_prompt(&e.kind) && i > 0 {
            a.run_starts.push(i);
        }
        // The entry's effect on the pending calls and the ending.
        if let Some(end) = settles[i] {
            pending.clear();
            ending = end;
            a.settles.push((i, end));
        } else {
            match &e.kind {
                EntryKind::Assistant { tools, .. } => {
                    pending.extend(tools.iter().map(|t| (&*t.id, &t.name)));
                    ending = Ending::NoResult;
                }
                EntryKind::ToolResults { ids, .. } => {
                    pending.retain(|(id, _)| !ids.iter().any(|x| &**x == *id));
                    ending = Ending::NoResult;
                }
                EntryKind::Prompt { interrupt, .. } => {
                    if *interrupt {
                        pending.clear();
                        ending = Ending::Interrupted;
                    } else {
                        ending = Ending::NoResult;
                    }
                }
                EntryKind::Enqueue | EntryKind::Progress => ending = Ending::NoResult,
                _ => {}
            }
        }
        last_work = Some(i);
    }
    a.ending = Some(ending);
    a
}

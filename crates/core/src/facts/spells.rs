//! Quiet spells as a session runs, by the definition `watchdog-audit` applies to past
//! recordings (its `spells` module), so that a live run's spells and a back-filled recording's
//! can be put side by side.
//!
//! A **quiet spell** is the time between two consecutive *progress* lines: a top-level line
//! whose [`Signal`] is progress or a settle (a `result`), or a subagent's line that is not a
//! keep-alive. That is what the no-progress clock sees. Its `quiet` is the longest gap between
//! any two lines inside it (keep-alives, human waits and unparseable lines included): what the
//! idle clock sees. Its [`SpellKind`] is decided by the state when it began and the line that
//! ended it: `after_result` after a `result`; `human` when a permission request was open in it
//! (or is still open); `tool` when a top-level tool call was pending (the tool is the one whose
//! `tool_result` ended the spell, else the latest pending; an `AskUserQuestion` call makes it
//! `human`); `model` otherwise. It is **productive** when it is a `model` or `tool` spell.
//!
//! The tracker is fed by the [`Tally`](super::Tally) of a session registered with
//! [`SessionConfig::with_live_facts`](crate::SessionConfig::with_live_facts): per line it
//! compares two instants and sets a few flags; a progress line builds one [`QuietSpell`] (the
//! tool's name is shared, not copied), reported as [`Event::QuietSpells`](crate::Event).

use std::sync::Arc;
use std::time::Duration;

use crate::time::Instant;

use crate::classify::{Class, Signal};

/// What a quiet spell was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SpellKind {
    /// Waiting on the model.
    Model,
    /// Waiting on a tool call.
    Tool,
    /// After a final answer.
    AfterResult,
    /// Waiting on a person.
    Human,
}

impl SpellKind {
    /// Every kind, in report order.
    pub const ALL: [SpellKind; 4] = [
        SpellKind::Model,
        SpellKind::Tool,
        SpellKind::AfterResult,
        SpellKind::Human,
    ];
    /// Snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SpellKind::Model => "model",
            SpellKind::Tool => "tool",
            SpellKind::AfterResult => "after_result",
            SpellKind::Human => "human",
        }
    }
}

/// One quiet spell that a line ended, as a live session reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuietSpell {
    /// What it was.
    pub kind: SpellKind,
    /// The tool, for `tool` spells (and `human` ones while a tool call was pending).
    pub tool: Option<Arc<str>>,
    /// When it began (the progress line before it).
    pub started: Instant,
    /// Its length: no progress for this long.
    pub length: Duration,
    /// The longest gap with no line at all inside it.
    pub quiet: Duration,
    /// Followed by more work: a `model` or `tool` spell.
    pub productive: bool,
}

impl QuietSpell {
    /// What ended it, as `audit`'s back-fill says for a spell no kill ended: `progress` for
    /// a productive spell, `end` otherwise.
    pub fn ended_by(&self) -> &'static str {
        if self.productive {
            "progress"
        } else {
            "end"
        }
    }
}

/// The tool `AskUserQuestion`: a call of it waits on a person.
const ASK_USER: &str = "AskUserQuestion";

/// How a line counts for the spells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// It ends the current spell and starts the next.
    Progress,
    /// A permission request: the spell waits on a person.
    HumanWait,
    /// Any other line: only its time counts (a gap closes).
    Other,
}

impl Step {
    /// How a line of class `class` counts (`parsed`: it is a JSON line; `top_level`: it has
    /// no `parent_tool_use_id`). A subagent's line is progress unless it is a keep-alive.
    pub(crate) fn of(class: Class, parsed: bool, top_level: bool) -> Step {
        match class.signal {
            _ if !parsed => Step::Other,
            Signal::KeepAlive => Step::Other,
            Signal::HumanWait if top_level => Step::HumanWait,
            Signal::Progress | Signal::Settle | Signal::HumanWait => Step::Progress,
        }
    }
}

/// What the tally knows when a progress line ends a spell.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ending<'a> {
    /// A permission request is open (the registry's human wait).
    pub waiting_on_person: bool,
    /// The latest pending top-level tool call, before the line.
    pub last_pending: Option<&'a Arc<str>>,
    /// The first pending tool call (in call order) that the line answered, if any.
    pub answered: Option<&'a Arc<str>>,
    /// The line is a top-level `result`.
    pub settles: bool,
    /// The line is not a subagent's.
    pub top_level: bool,
}

/// The state of the spell in progress.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SpellTracker {
    /// The last progress line (the current spell's start), once one came.
    last_progress: Option<Instant>,
    /// The last line of any kind.
    last_line: Option<Instant>,
    /// The longest gap in the current spell so far.
    quiet: Duration,
    /// A permission request came in the current spell.
    human: bool,
    /// The last top-level progress line was a `result`.
    settled: bool,
}

impl SpellTracker {
    /// Any line at `now`: the gap since the last line counts toward the spell's quiet.
    pub(crate) fn line(&mut self, now: Instant) {
        if let Some(last) = self.last_line {
            self.quiet = self.quiet.max(now.saturating_duration_since(last));
        }
        self.last_line = Some(now);
    }

    /// A permission request came.
    pub(crate) fn human_wait(&mut self) {
        self.human = true;
    }

    /// A progress line at `now` (after [`SpellTracker::line`]): the spell it ended, if one
    /// was in progress, and the next one begins.
    pub(crate) fn progress(&mut self, now: Instant, e: Ending<'_>) -> Option<QuietSpell> {
        let spell = self.last_progress.map(|started| {
            let (kind, tool) = if self.settled {
                (SpellKind::AfterResult, None)
            } else if self.human || e.waiting_on_person {
                (SpellKind::Human, e.last_pending.cloned())
            } else if let Some(last) = e.last_pending {
                let t = e.answered.unwrap_or(last);
                let kind = if &**t == ASK_USER {
                    SpellKind::Human
                } else {
                    SpellKind::Tool
                };
                (kind, Some(t.clone()))
            } else {
                (SpellKind::Model, None)
            };
            QuietSpell {
                kind,
                tool,
                started,
                length: now.saturating_duration_since(started),
                quiet: self.quiet,
                productive: matches!(kind, SpellKind::Model | SpellKind::Tool),
            }
        });
        if e.settles {
            self.settled = true;
        } else if e.top_level {
            self.settled = false;
        }
        self.last_progress = Some(now);
        self.quiet = Duration::ZERO;
        self.human = e.waiting_on_person;
        spell
    }
}

//! Quiet spells: the one classifier of the project (described in [`crate::facts`]).

use std::sync::Arc;
use std::time::Duration;

use crate::time::Instant;

use crate::classify::{Class, Signal};

/// What a quiet spell was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
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
#[non_exhaustive]
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

/// Whether a call of the tool `name` waits on a person (`AskUserQuestion`).
pub fn asks_a_person(name: &str) -> bool {
    name == ASK_USER
}

/// The rule: a spell's kind, and the tool it names, from the state it was in. `settled`: after
/// a `result`; `person`: a person was waited on; `waited_on`: the pending tool call it waited
/// on (the one the ending line answered, else the latest pending) and whether a person
/// answered its permission; `last_pending`: the latest pending call; `by_person`: a person's
/// prompt ended it.
fn decide<'t, T: AsRef<str> + ?Sized>(
    settled: bool,
    person: bool,
    waited_on: Option<(&'t T, bool)>,
    last_pending: Option<&'t T>,
    by_person: bool,
) -> (SpellKind, Option<&'t T>) {
    if settled {
        (SpellKind::AfterResult, None)
    } else if person {
        (SpellKind::Human, last_pending)
    } else if let Some((t, person_answered)) = waited_on {
        if person_answered || asks_a_person(t.as_ref()) {
            (SpellKind::Human, Some(t))
        } else {
            (SpellKind::Tool, Some(t))
        }
    } else if by_person {
        (SpellKind::Human, None)
    } else {
        (SpellKind::Model, None)
    }
}

impl crate::facts::Activity {
    /// The spell this activity is in, as [`SpellTracker`] would name it if a line ended it
    /// now: after a `result`, waiting on a person, in a tool call (an `AskUserQuestion` call
    /// waits on a person), else on the model. What a kill ended, for a host that reads the
    /// status line's activity.
    pub fn spell(&self) -> (SpellKind, Option<&str>) {
        use crate::facts::Activity;
        let tool = match self {
            Activity::Tool(t) | Activity::InFlight { tool: t, .. } => Some((t.as_str(), false)),
            _ => None,
        };
        decide(
            matches!(self, Activity::Settled),
            matches!(self, Activity::HumanWait),
            tool,
            None,
            false,
        )
    }
}

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

/// A pending tool call, as a progress line finds it.
#[derive(Debug, Clone, Copy)]
pub struct PendingTool<'a> {
    /// The tool.
    pub name: &'a Arc<str>,
    /// A person answered its permission prompt (transcripts say so; stream-json does not).
    pub person_answered: bool,
}

/// What is known when a progress line ends a spell: the tracker's input beside the time.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProgressLine<'a> {
    /// A person is being waited on (a permission request is open).
    pub waiting_on_person: bool,
    /// The latest pending top-level tool call, before the line.
    pub last_pending: Option<PendingTool<'a>>,
    /// The first pending tool call (in call order) that the line answered, if any.
    pub answered: Option<PendingTool<'a>>,
    /// The line is a person's prompt (transcripts: a queued prompt, or one typed and not just
    /// queued).
    pub by_person: bool,
    /// The line is, or the next progress line will be, a user's interrupt: the spell was no
    /// productive silence (known to a reader of a whole transcript only).
    pub interrupted: bool,
    /// The line is a top-level `result` (or a transcript's final answer).
    pub settles: bool,
    /// The line is the main thread's (not a subagent's): unless it settles, the session is
    /// at work again.
    pub top_level: bool,
}

/// The quiet-spell classifier: fed every line's time ([`SpellTracker::line`]), the human
/// waits ([`SpellTracker::human_wait`]) and the progress lines ([`SpellTracker::progress`]),
/// it returns each spell as a progress line ends it. The registry feeds it stream-json lines
/// (a session with live facts); `watchdog-audit` feeds it a transcript's or capture's
/// entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpellTracker {
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
    pub fn line(&mut self, now: Instant) {
        if let Some(last) = self.last_line {
            self.quiet = self.quiet.max(now.saturating_duration_since(last));
        }
        self.last_line = Some(now);
    }

    /// After a top-level `result` (or a transcript's final answer), with no main-thread
    /// progress since.
    pub fn settled(&self) -> bool {
        self.settled
    }

    /// A permission request came.
    pub fn human_wait(&mut self) {
        self.human = true;
    }

    /// A progress line at `now` (after [`SpellTracker::line`]): the spell it ended, if one
    /// was in progress, and the next one begins.
    pub fn progress(&mut self, now: Instant, e: ProgressLine<'_>) -> Option<QuietSpell> {
        let spell = self.last_progress.map(|started| {
            let waited_on = e.last_pending.map(|last| e.answered.unwrap_or(last));
            let (kind, tool) = decide(
                self.settled,
                self.human || e.waiting_on_person,
                waited_on.map(|t| (t.name, t.person_answered)),
                e.last_pending.map(|t| t.name),
                e.by_person,
            );
            QuietSpell {
                kind,
                tool: tool.cloned(),
                started,
                length: now.saturating_duration_since(started),
                quiet: self.quiet,
                productive: matches!(kind, SpellKind::Model | SpellKind::Tool) && !e.interrupted,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::Activity;

    /// What a kill ended, from the status line's activity (the telemetry's killed spell).
    #[test]
    fn the_spell_of_an_activity() {
        let k = |a: Activity| {
            let (kind, tool) = a.spell();
            (kind, tool.map(str::to_owned))
        };
        assert_eq!(k(Activity::Settled), (SpellKind::AfterResult, None));
        assert_eq!(k(Activity::HumanWait), (SpellKind::Human, None));
        assert_eq!(
            k(Activity::Tool("Bash".into())),
            (SpellKind::Tool, Some("Bash".into()))
        );
        assert_eq!(
            k(Activity::InFlight {
                tool: "mcp__db__query".into(),
                for_secs: 5
            }),
            (SpellKind::Tool, Some("mcp__db__query".into()))
        );
        assert_eq!(
            k(Activity::Tool("AskUserQuestion".into())),
            (SpellKind::Human, Some("AskUserQuestion".into()))
        );
        assert_eq!(k(Activity::Thinking), (SpellKind::Model, None));
        assert_eq!(k(Activity::Starting), (SpellKind::Model, None));
    }
}

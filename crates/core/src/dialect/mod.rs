//! Which agent CLI printed a session's lines ([`Dialect`]), and how each one's lines read.
//!
//! Claude Code's stream-json is the default dialect and its contract is [`classify()`]'s.
//! OpenAI Codex (`codex exec --json`) and opencode (`opencode run --format json`) print other
//! events for the same things: work going on, a sign of life, the end of a turn and how it
//! went, the session's id, a tool call that runs. Each dialect here maps its events onto the
//! same [`Signal`]s and [`LineKind`]s, and the registry reads the same facts from them, so the
//! policy, the deadlines, the process-tree evidence, the outcome and everything built on them
//! work unchanged: one classifier with a dialect, not a second engine. Each dialect's events
//! and what they count as: [`Dialect::grammar`] (the tables of `docs/dialects/`).
//!
//! A session's dialect is its host's choice first (from the command it started,
//! [`SessionConfig::with_dialect`](crate::SessionConfig::with_dialect)), then its first
//! *decisive* line's ([`Dialect::of_line`]: a line whose `type` only one dialect prints)
//! confirms it or chooses another, once: [`SessionDialect`]. A session registered without a
//! dialect is Claude Code's and its lines are never looked at for another.

use std::borrow::Cow;

use crate::classify::{classify, Class, LineKind, Signal};
use crate::view::LineView;

mod codex;
mod opencode;

/// The agent CLI whose stream a session's lines are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Dialect {
    /// Claude Code's stream-json (`claude -p … --output-format stream-json`): the default.
    #[default]
    Claude,
    /// OpenAI Codex's JSON Lines (`codex exec --json …`).
    Codex,
    /// opencode's JSON events (`opencode run --format json …`).
    Opencode,
}

/// One event of a dialect's grammar, as its documentation page shows it: an example line (from
/// a recording of the real CLI, shortened), what it counts as, and what else is read from it.
/// A test classifies every example; another checks that the page's table says the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrammarRow {
    /// The event, e.g. `turn.completed`, or `step_finish` with `reason` other than `tool-calls`.
    pub event: &'static str,
    /// An example line.
    pub example: &'static str,
    /// What it counts as.
    pub signal: Signal,
    /// Its kind (the counters' name: [`LineKind::as_str`]).
    pub kind: LineKind,
    /// What else is read from it (the session id, the outcome, a tool call), in words.
    pub reads: &'static str,
}

impl Dialect {
    /// Every dialect, the default first.
    pub const ALL: [Dialect; 3] = [Dialect::Claude, Dialect::Codex, Dialect::Opencode];

    /// Its short name: `claude`, `codex`, `opencode` (the summary's `dialect`, a capture's).
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Claude => "claude",
            Dialect::Codex => "codex",
            Dialect::Opencode => "opencode",
        }
    }

    /// The dialect of a short name ([`Dialect::as_str`]).
    ///
    /// ```
    /// use watchdog_core::Dialect;
    /// assert_eq!(Dialect::parse("codex"), Some(Dialect::Codex));
    /// assert_eq!(Dialect::parse("gemini"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Dialect> {
        Dialect::ALL.into_iter().find(|d| d.as_str() == name)
    }

    /// The CLI's name, for messages: `Claude Code`, `OpenAI Codex`, `opencode`.
    pub fn cli(self) -> &'static str {
        match self {
            Dialect::Claude => "Claude Code",
            Dialect::Codex => "OpenAI Codex",
            Dialect::Opencode => "opencode",
        }
    }

    /// Classify one parsed line of this dialect. Pure and total, like [`classify()`] (which is
    /// `Dialect::Claude.classify`): a type the dialect does not print is a keep-alive of kind
    /// [`LineKind::Unknown`].
    ///
    /// ```
    /// use watchdog_core::{Dialect, LineKind, LineView, Signal};
    /// let line = LineView::parse(br#"{"type":"turn.completed","usage":{"input_tokens":20}}"#).unwrap();
    /// let class = Dialect::Codex.classify(&line);
    /// assert_eq!((class.signal, class.kind), (Signal::Settle, LineKind::TurnCompleted));
    /// // The same line in a Claude Code stream is an unknown type: a keep-alive.
    /// assert_eq!(Dialect::Claude.classify(&line).signal, Signal::KeepAlive);
    /// ```
    pub fn classify(self, view: &LineView<'_>) -> Class {
        match self {
            Dialect::Claude => classify(view),
            Dialect::Codex => codex::classify(view),
            Dialect::Opencode => opencode::classify(view),
        }
    }

    /// The dialect a line is decisively in: the one dialect that knows its `type`. `error`,
    /// both Codex's and opencode's, is opencode's when it carries opencode's `sessionID`. `None`
    /// for a line no dialect knows (an unknown type, none at all).
    ///
    /// ```
    /// use watchdog_core::{Dialect, LineView};
    /// let of = |l: &str| Dialect::of_line(&LineView::parse_str(l).unwrap());
    /// assert_eq!(of(r#"{"type":"system","subtype":"init"}"#), Some(Dialect::Claude));
    /// assert_eq!(of(r#"{"type":"thread.started","thread_id":"t"}"#), Some(Dialect::Codex));
    /// assert_eq!(of(r#"{"type":"step_start","sessionID":"ses_1"}"#), Some(Dialect::Opencode));
    /// assert_eq!(of(r#"{"type":"error","message":"Reconnecting... 1/5"}"#), Some(Dialect::Codex));
    /// assert_eq!(of(r#"{"type":"brand_new"}"#), None);
    /// ```
    pub fn of_line(view: &LineView<'_>) -> Option<Dialect> {
        let known = |d: &Dialect| d.classify(view).kind != LineKind::Unknown;
        let mut found = Dialect::ALL.into_iter().filter(known);
        let first = found.next()?;
        Some(match found.next() {
            None => first,
            Some(_) if opencode::session_id(view).is_some() => Dialect::Opencode,
            Some(_) => Dialect::Codex,
        })
    }

    /// The dialect's events and what each counts as (its documentation page's table); empty
    /// for Claude Code, whose contract is [`classify()`]'s table.
    pub fn grammar(self) -> &'static [GrammarRow] {
        match self {
            Dialect::Claude => &[],
            Dialect::Codex => codex::GRAMMAR,
            Dialect::Opencode => opencode::GRAMMAR,
        }
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One session's dialect: the one its host expects until a decisive line
/// ([`Dialect::of_line`]) confirms it or chooses another, then that one for good.
///
/// ```
/// use watchdog_core::{Dialect, LineView, SessionDialect, Signal};
/// let mut d = SessionDialect::expect(Dialect::Claude); // the command did not say
/// let line = |l: &'static str| LineView::parse_str(l).unwrap();
/// // A wrapper's banner decides nothing; Codex's first event does.
/// d.classify(&line(r#"{"banner":"hello"}"#));
/// assert!(!d.is_confirmed());
/// d.classify(&line(r#"{"type":"thread.started","thread_id":"t-1"}"#));
/// assert_eq!((d.dialect(), d.is_confirmed()), (Dialect::Codex, true));
/// let end = d.classify(&line(r#"{"type":"turn.completed"}"#));
/// assert_eq!(end.signal, Signal::Settle);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionDialect {
    dialect: Dialect,
    confirmed: bool,
}

impl SessionDialect {
    /// Expect `dialect` until a decisive line says which it is.
    pub fn expect(dialect: Dialect) -> Self {
        SessionDialect {
            dialect,
            confirmed: false,
        }
    }

    /// `dialect`, whatever the lines say.
    pub fn fixed(dialect: Dialect) -> Self {
        SessionDialect {
            dialect,
            confirmed: true,
        }
    }

    /// The dialect as of now.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// A decisive line confirmed it (or it was fixed).
    pub fn is_confirmed(&self) -> bool {
        self.confirmed
    }

    /// Read one line: a decisive one settles the dialect (if not yet), then the line is
    /// classified in it.
    pub fn classify(&mut self, view: &LineView<'_>) -> Class {
        self.confirm(view);
        self.dialect.classify(view)
    }

    /// A decisive line settles the dialect (if not yet); returns whether this line did.
    pub(crate) fn confirm(&mut self, view: &LineView<'_>) -> bool {
        if self.confirmed {
            return false;
        }
        match Dialect::of_line(view) {
            Some(d) => {
                self.dialect = d;
                self.confirmed = true;
                true
            }
            None => false,
        }
    }
}

/// A tool call a dialect line begins or ends (for the process-tree evidence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolEdge<'a> {
    /// A call `id` of tool `name` began.
    Began {
        id: Cow<'a, str>,
        name: Cow<'a, str>,
    },
    /// Call `id` ended.
    Ended { id: Cow<'a, str> },
}

/// The CLI's session id a line carries, by its kind: Claude Code's `session_id`, Codex's
/// `thread.started` `thread_id`, opencode's `sessionID` (on every line). Not validated (that is
/// [`ClaudeSessionId::of_dialect_line`](crate::facts::ClaudeSessionId::of_dialect_line)'s).
pub(crate) fn session_id<'a>(view: &LineView<'a>, kind: LineKind) -> Option<Cow<'a, str>> {
    match kind {
        LineKind::ThreadStarted => codex::session_id(view),
        // opencode's lines, its `error` too (Codex's `error` carries none).
        k if k == LineKind::Error || opencode::KINDS.contains(&k) => opencode::session_id(view),
        _ => view.session_id(),
    }
}

/// Whether a line of this kind names the session afresh (a Claude Code `system/init`, a Codex
/// `thread.started`): it replaces an id read before.
pub(crate) fn names_session(view: &LineView<'_>, kind: LineKind) -> bool {
    match kind {
        LineKind::System => view.subtype().as_deref() == Some("init"),
        LineKind::ThreadStarted => true,
        _ => false,
    }
}

/// How a dialect line that ends a turn (its class is a settle; not a Claude Code `result`) says
/// the turn went, in the fields of a `result`
/// ([`ResultFacts::of_end`](crate::facts::ResultFacts::of_end) reads them as one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TurnEnd {
    pub(crate) subtype: Option<String>,
    pub(crate) is_error: Option<bool>,
    pub(crate) stop_reason: Option<String>,
    pub(crate) terminal_reason: Option<String>,
    pub(crate) api_error_status: Option<u16>,
}

impl TurnEnd {
    /// The turn failed.
    #[cfg(test)]
    pub(crate) fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }
}

/// How a dialect line that ends a turn says it went.
pub(crate) fn ending(view: &LineView<'_>, kind: LineKind) -> TurnEnd {
    match kind {
        LineKind::TurnCompleted | LineKind::TurnFailed => codex::ending(kind),
        _ => opencode::ending(view, kind),
    }
}

/// The tool call a dialect line begins or ends, if any.
pub(crate) fn tool_edge<'a>(view: &LineView<'a>, kind: LineKind) -> Option<ToolEdge<'a>> {
    match kind {
        LineKind::ItemStarted | LineKind::ItemCompleted => codex::tool_edge(view, kind),
        LineKind::StepStart | LineKind::StepFinish => opencode::tool_edge(kind),
        _ => None,
    }
}

/// The tool call a dialect line begins or ends and what it wrote, read together (one look at a
/// Codex item): for the registry, which needs both.
pub(crate) fn tool_facts<'a>(
    view: &LineView<'a>,
    kind: LineKind,
) -> (Option<ToolEdge<'a>>, Option<Written<'a>>) {
    match kind {
        LineKind::ItemStarted | LineKind::ItemCompleted => codex::item_call(view, kind),
        LineKind::ToolUse => (None, opencode::completed_tool(view).map(Written::Tool)),
        _ => (tool_edge(view, kind), None),
    }
}

/// What a completed dialect tool call wrote (see [`tool_facts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Written<'a> {
    /// The call changed files, whatever its tool (Codex's `file_change`).
    Files,
    /// A call of this tool completed: a write if the policy names it a write tool.
    Tool(Cow<'a, str>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grammar_row_classifies_as_it_says() {
        for d in Dialect::ALL {
            for row in d.grammar() {
                let view = LineView::parse_str(row.example)
                    .unwrap_or_else(|e| panic!("{}: {e}", row.example));
                assert_eq!(
                    d.classify(&view),
                    Class {
                        signal: row.signal,
                        kind: row.kind
                    },
                    "{d}: {}",
                    row.event
                );
                assert_eq!(Dialect::of_line(&view), Some(d), "{d}: {}", row.event);
            }
        }
    }

    #[test]
    fn claude_s_lines_are_decisively_claude_s_and_no_other_dialect_knows_them() {
        for line in [
            r#"{"type":"system","subtype":"init","session_id":"s"}"#,
            r#"{"type":"assistant","message":{}}"#,
            r#"{"type":"stream_event","event":{"type":"ping"}}"#,
            r#"{"type":"result","subtype":"success"}"#,
            r#"{"type":"rate_limit_event"}"#,
        ] {
            let view = LineView::parse_str(line).unwrap();
            assert_eq!(Dialect::of_line(&view), Some(Dialect::Claude), "{line}");
            for d in [Dialect::Codex, Dialect::Opencode] {
                assert_eq!(d.classify(&view).kind, LineKind::Unknown, "{d}: {line}");
            }
        }
    }

    fn line(l: &str) -> LineView<'_> {
        LineView::parse_str(l).unwrap()
    }

    #[test]
    fn a_session_keeps_the_dialect_its_first_decisive_line_chose() {
        let mut d = SessionDialect::expect(Dialect::Codex);
        // The command said codex, but Claude Code's init came: the lines decide.
        d.classify(&line(r#"{"type":"system","subtype":"init"}"#));
        assert_eq!((d.dialect(), d.is_confirmed()), (Dialect::Claude, true));
        // Later lines of another dialect change nothing.
        let c = d.classify(&line(r#"{"type":"turn.completed"}"#));
        assert_eq!((d.dialect(), c.kind), (Dialect::Claude, LineKind::Unknown));
        let mut fixed = SessionDialect::fixed(Dialect::Opencode);
        fixed.classify(&line(r#"{"type":"thread.started","thread_id":"x"}"#));
        assert_eq!(fixed.dialect(), Dialect::Opencode);
    }

    #[test]
    fn the_session_id_is_each_dialect_s_own() {
        let id = |d: Dialect, l: &str| {
            let view = line(l);
            session_id(&view, d.classify(&view).kind).map(Cow::into_owned)
        };
        let codex = r#"{"type":"thread.started","thread_id":"019b-7f"}"#;
        assert_eq!(id(Dialect::Codex, codex).as_deref(), Some("019b-7f"));
        assert_eq!(
            id(Dialect::Codex, r#"{"type":"error","message":"x"}"#),
            None
        );
        let error = r#"{"type":"error","sessionID":"ses_1","error":{"name":"APIError"}}"#;
        assert_eq!(id(Dialect::Opencode, error).as_deref(), Some("ses_1"));
        let step = r#"{"type":"step_start","sessionID":"ses_2","part":{}}"#;
        assert_eq!(id(Dialect::Opencode, step).as_deref(), Some("ses_2"));
        let init = r#"{"type":"system","subtype":"init","session_id":"c-1"}"#;
        assert_eq!(id(Dialect::Claude, init).as_deref(), Some("c-1"));
    }

    #[test]
    fn every_dialect_has_a_name_it_parses_back() {
        for d in Dialect::ALL {
            assert_eq!(Dialect::parse(d.as_str()), Some(d));
            assert_eq!(d.to_string(), d.as_str());
        }
    }
}

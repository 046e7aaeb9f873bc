//! Per-session settings ([`SessionConfig`]): what one session overrides of its registry's
//! policy, and what its host asks the registry to keep for it.

use super::Limits;

/// Per-session settings: overrides of the registry's [`Limits`].
///
/// ```
/// use std::time::Duration;
/// use watchdog_core::{Limits, SessionConfig};
/// let cfg = SessionConfig::default()
///     .with_limits(Limits::default().with_ceiling(Some(Duration::from_secs(3600))).unwrap());
/// assert!(cfg.limits().is_some());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionConfig {
    limits: Option<Limits>,
    host_input: bool,
    from_registration: bool,
    tally: bool,
    live_facts: bool,
    tree_evidence: bool,
    busy_presumed: bool,
    expect_session: Option<crate::facts::ClaudeSessionId>,
    dialect: Option<crate::Dialect>,
}

impl SessionConfig {
    /// Use these limits for this session instead of the registry's.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = Some(limits);
        self
    }
    /// The child reads its host's messages on stdin (`--input-format stream-json`) and that
    /// input is open: after a `result`, the session is **waiting for its host** until the
    /// host's next `user` message ([`Registry::observe_input`](crate::Registry::observe_input))
    /// or the end of its input ([`Registry::input_closed`](crate::Registry::input_closed)).
    /// Default false.
    pub fn with_host_input(mut self, open: bool) -> Self {
        self.host_input = open;
        self
    }
    /// Whether the child reads its host's messages on an open stdin.
    pub fn host_input(&self) -> bool {
        self.host_input
    }
    /// The idle and no-progress clocks run from registration, as if registering were a tool
    /// boundary (the reference package's rule: a query that never prints is killed at the
    /// idle patience); the startup clock still waits for the first line. Default false: before
    /// the first line only the startup limit and the ceiling apply.
    pub fn with_clocks_from_registration(mut self, on: bool) -> Self {
        self.from_registration = on;
        self
    }
    /// Whether the idle and no-progress clocks run from registration.
    pub fn clocks_from_registration(&self) -> bool {
        self.from_registration
    }
    /// Keep the tally of the session's work ([`Tally`](crate::facts::Tally): its activity,
    /// turns, subagents and their failures), read from the same lines the policy reads, for
    /// [`Registry::tally`](crate::Registry::tally). Default false (a registry of many
    /// in-process sessions keeps only what the deadlines need).
    pub fn with_tally(mut self, on: bool) -> Self {
        self.tally = on;
        self
    }
    /// Whether the session keeps a [`Tally`](crate::facts::Tally).
    pub fn tally(&self) -> bool {
        self.tally || self.live_facts
    }
    /// Report, while the session runs, what its lines tell beyond the deadlines: the quiet
    /// spells they end ([`Event::QuietSpells`](crate::Event::QuietSpells), by the definition of
    /// [`crate::facts`]), the MCP calls outstanding whenever they change
    /// ([`Event::McpCalls`](crate::Event::McpCalls)), and Claude Code's session id once known
    /// ([`Event::SessionIdentified`](crate::Event::SessionIdentified)). Implies
    /// [`SessionConfig::with_tally`]. Default false: without it none of this is kept or
    /// looked at.
    pub fn with_live_facts(mut self, on: bool) -> Self {
        self.live_facts = on;
        self
    }
    /// Whether the session reports its live facts ([`SessionConfig::with_live_facts`]).
    pub fn live_facts(&self) -> bool {
        self.live_facts
    }
    /// The session must be Claude Code session `id` (a resumed continuation): a top-level
    /// `system/init` that names another one (or none) is reported once, as
    /// [`Event::SessionMismatch`](crate::Event::SessionMismatch). The host decides what to do
    /// (the CLI stops the run). Default: any session.
    pub fn with_expected_session(mut self, id: crate::facts::ClaudeSessionId) -> Self {
        self.expect_session = Some(id);
        self
    }
    /// The session id the session must have, if one was set.
    pub fn expected_session(&self) -> Option<&crate::facts::ClaudeSessionId> {
        self.expect_session.as_ref()
    }
    /// The host samples the child's process tree and hands each sample to
    /// [`Registry::observe_tree`](crate::Registry::observe_tree): the session keeps the tool
    /// calls outstanding and what the samples said ([`crate::evidence`]: a busy tool is not
    /// hung, the memory guard). Default false.
    pub fn with_tree_evidence(mut self, on: bool) -> Self {
        self.tree_evidence = on;
        self
    }
    /// Whether the host samples the session's process tree
    /// ([`SessionConfig::with_tree_evidence`]).
    pub fn tree_evidence(&self) -> bool {
        self.tree_evidence
    }
    /// The host cannot sample the process tree but runs beside one that does (an SDK host
    /// beside the drop-in): every outstanding tool call is taken for busy, so the no-progress
    /// kill comes no earlier than the busy-tool hold allows (the last progress plus
    /// [`busy_cap`](crate::Limits::busy_cap)): the latest the watchdog beside it may kill.
    /// Implies [`SessionConfig::with_tree_evidence`] (the tool calls are kept); no sample is
    /// wanted. Default false.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use watchdog_core::{Event, KillKind, Limits, Registry, SessionConfig};
    /// let (t0, s) = (Instant::now(), Duration::from_secs);
    /// let limits = Limits::default().with_no_progress(s(60)).unwrap().with_busy_cap(s(300)).unwrap();
    /// let mut reg = Registry::new(limits);
    /// let id = reg.register(t0, SessionConfig::default().with_busy_tools_presumed(true));
    /// reg.observe_line(t0, id, br#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}"#);
    /// while let Some(at) = reg.poll_timeout() {
    ///     reg.handle_timeout(at);
    ///     if reg.kill(id).is_some() { break; }
    /// }
    /// // Held to the last progress plus the cap, not killed at no_progress (60 s).
    /// let kill = reg.kill(id).unwrap();
    /// assert_eq!((kill.kind, kill.elapsed), (KillKind::NoProgress, s(300)));
    /// ```
    pub fn with_busy_tools_presumed(mut self, on: bool) -> Self {
        self.busy_presumed = on;
        self.tree_evidence |= on;
        self
    }
    /// Whether every outstanding tool call is taken for busy
    /// ([`SessionConfig::with_busy_tools_presumed`]).
    pub fn busy_tools_presumed(&self) -> bool {
        self.busy_presumed
    }
    /// The session's lines are expected in `dialect` (the host's reading of the command it
    /// started: [`Dialect`](crate::Dialect)), until its first decisive line confirms that or
    /// chooses another ([`SessionDialect`](crate::SessionDialect)); `Dialect::Claude` asks the
    /// lines to tell when the command did not. Default: none, Claude Code's stream-json, and
    /// the lines are never looked at for another dialect.
    ///
    /// ```
    /// use std::time::Instant;
    /// use watchdog_core::{Dialect, Outcome, Registry, SessionConfig, Limits};
    /// let t0 = Instant::now();
    /// let mut reg = Registry::new(Limits::default());
    /// let id = reg.register(t0, SessionConfig::default().with_dialect(Dialect::Codex));
    /// reg.observe_line(t0, id, br#"{"type":"thread.started","thread_id":"t-1"}"#);
    /// reg.observe_line(t0, id, br#"{"type":"turn.started"}"#);
    /// reg.observe_line(t0, id, br#"{"type":"turn.completed","usage":{}}"#);
    /// let record = reg.finish(t0, id).unwrap();
    /// assert_eq!(record.outcome, Outcome::Success);
    /// assert_eq!(record.session_id.unwrap().as_str(), "t-1");
    /// assert_eq!(record.dialect, Dialect::Codex);
    /// ```
    pub fn with_dialect(mut self, dialect: crate::Dialect) -> Self {
        self.dialect = Some(dialect);
        self
    }
    /// The dialect the host expects, if it gave one ([`SessionConfig::with_dialect`]).
    pub fn dialect(&self) -> Option<crate::Dialect> {
        self.dialect
    }
    /// The overriding limits, if any.
    pub fn limits(&self) -> Option<&Limits> {
        self.limits.as_ref()
    }
}

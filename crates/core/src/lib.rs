//! # watchdog-core
//!
//! The sans-IO heart of agent-sdk-watchdog: pure policies that decide, for any number of Claude
//! Code sessions, when each must be stopped and why. No I/O, no async runtime, no OS clock: every
//! call takes `now`, and decisions come back as values and events.
//!
//! - `view`: a borrowed, lenient view of one stream-json line ([`LineView`]).
//!   Its JSON walkers are the `watchdog-json` crate's (not part of this API).
//! - `classify`: what a line means for liveness (the classification contract: [`classify()`]).
//! - `dialect`: which agent CLI printed the lines ([`Dialect`]: Claude Code's stream-json by
//!   default, OpenAI Codex's `exec --json`, opencode's `run --format json`), each read by the
//!   same classifier onto the same signals and facts.
//! - [`config`]: validated limits ([`Limits`], [`SessionConfig`]), the value types that hold
//!   each rule ([`config::PositiveDuration`], …); every default is the typed value's
//!   (`Limits::default()`, `SessionConfig::default()`).
//! - `registry`: many sessions on one timer, exact deadlines ([`Registry`]). The one observer
//!   every host drives: each line is read once, for the deadlines, the facts, the tally and the
//!   rate limits, and everything that follows from it comes back as events and values.
//! - `event`: kills, extensions, stalling warnings, outcomes ([`Event`]).
//! - [`evidence`]: facts from the child's process tree, sampled by its host: a busy tool is
//!   not a hung one, the memory guard, what a kill names.
//! - [`facts`]: what a session said about itself, owned by the registry: Claude Code's session
//!   id ([`facts::ClaudeSessionId`]), the last `result`'s fields ([`facts::ResultFacts`]), the
//!   tally of its work ([`facts::Tally`]: activity, turns, subagent failures) and its quiet
//!   spells ([`facts::SpellTracker`], the one classifier).
//! - [`ending`]: who stopped a run, how it ended ([`ending::RunEnd`]), its exit code and
//!   whether a retry is right: one precedence for `run`, the drop-in and the SDK helpers.
//! - [`synthetic`]: the synthetic final `result` the watchdog writes on a kill, and its reader.
//! - [`transcript`]: one line of a Claude Code transcript, read once ([`transcript::Entry`]),
//!   and the interrupt marker.
//! - `record`: how one run ended, as one value ([`RunRecord`]), from the registry's end
//!   ([`Registry::finish`]) and the host's own facts (its kill ladder, the exit, the lines).
//! - [`mcp`]: what Claude Code itself does about MCP servers, as the policy applies it: where
//!   it gives up on a silent call ([`mcp::give_up`]), the variables and `--mcp-config` servers
//!   that move it ([`mcp::McpSetup`]), and the `mcp__<server>__<tool>` naming.
//! - wall-clock time ([`WallMs`]): UTC calendar dates, ISO-8601 both ways, by hand
//!   ([`format_iso_ms`], [`parse_iso_ms`]).
//! - [`rate_limit`]: one usable reading from many `rate_limit_event` frames, per window (the
//!   registry keeps one, fed by its sessions' lines; a window's reset is one of its deadlines).
//! - [`reader_wait`]: the output-blocked bound as one rule: how long a host's reader took no
//!   byte while output waited for it, leaving out time the host itself did not run.
//! - [`recovery`]: the continue-at-most-once decision, and the ledger that makes it durable
//!   ([`recovery::SubagentDecision`]: the same for Claude Code subagents, keyed by session + agent id).
//!
//! What a host does around the policy (the capture format and its replay, the fleet metrics
//! and their Prometheus exposition, how Claude Code was started, warning de-dup) is the
//! `watchdog-host` crate.
//!
//! # Classification (the contract)
//!
//! | line | counts as |
//! |---|---|
//! | `assistant`, `user`, `system/init`, `system/status`, `system/thinking_tokens`, `system/task_*`, `system/hook_*`, `system/compact_boundary`, `tool_use_summary`, any `stream_event` whose `event.type` is not `ping` and that carries no `abandoned_blocks`; subagent lines (non-null `parent_tool_use_id`) alike | **progress** |
//! | `stream_event` `ping` or with `abandoned_blocks`, `tool_progress`, `rate_limit_event`, `system/api_retry`, every other `system` subtype, `control_request` / `control_response` / `control_cancel_request` (except a human wait), any unknown `type`, an unparseable line (malformed, truncated, not UTF-8) | **keep-alive** |
//! | `result` (any subtype) | **settle** |
//! | `system/session_state_changed` with `state: "requires_action"`, or a `control_request` whose `request.subtype` is `can_use_tool` | **human wait** begins |
//! | `assistant` `tool_use` block, then a `user` `tool_result` with the same id and no `is_error` | a **completed tool**; a write tool's is the first write |
//!
//! A human wait ends when the host's `control_response` for every pending request is seen
//! through [`Registry::observe_input`] (or the CLI cancels it with `control_cancel_request`), or
//! when a `session_state_changed` reports `running` or `idle` with no request pending.
//!
//! **An announced back-off is not a hang.** A `system/api_retry` at `t` with `retry_delay_ms`
//! begins (or continues) a back-off storm: neither the idle nor the no-progress clock counts the
//! announced wait; both start afresh at its end (`t + retry_delay_ms`), so the idle kill comes no
//! earlier than that end plus the patience and the no-progress kill no earlier than that end
//! plus `no_progress`. Progress after the end ends the storm. A storm holds the clocks at most
//! `max_backoff` after its first retry; the ceiling always holds. A kill during a storm carries
//! it ([`Kill::backoff`]) and is never continued.
//!
//! **Background work is working, not waiting.** While the last
//! `system/background_tasks_changed` lists tasks (other than `ambient` ones), or a
//! `system/task_started` with `is_backgrounded: true` (or a `task_updated` that moved a task to
//! the background) has not ended (`task_updated` with `completed`, `failed` or `killed`, or its
//! `task_notification`), a `result` does not settle the session into waiting: the idle and
//! no-progress clocks run as during a turn, and neither the linger nor the wait for the host
//! applies. Lines of the tasks (a subagent's lines, `system/task_*`) are their progress and do
//! not start a new turn; when the last task ends, the waiting rules apply again from then.
//! Each task has a deadline of its own ([`Limits::task_silence`]), from its last sign of life:
//! a silent task is noticed ([`Event::TaskSilent`]), the idle kill waits for every task's
//! deadline, and an idle kill with tasks outstanding is [`KillKind::TaskSilent`], naming them
//! ([`Kill::outstanding`]).
//!
//! **What Claude Code schedules or waits on itself.** A declared wakeup (`ScheduleWakeup`,
//! `CronCreate`) bounds the wait after a `result`: its due time plus the idle patience
//! ([`KillKind::WakeupMissed`]); a hook that runs (`system/hook_started` without its
//! `hook_response`) holds the idle kill until its start + 630 s (Claude Code cancels a hook
//! at its timeout); the host's own control requests (seen through
//! [`Registry::observe_input`]) are bounded by [`Limits::control_timeout`]
//! ([`KillKind::Unanswered`]). A `result` beyond the host's messages is reported
//! ([`Event::UnsolicitedResult`]).
//!
//! # Deadlines and defaults
//!
//! The defaults are [`Limits::default()`](Limits::default)'s (a test checks every row).
//!
//! | deadline | default | kill when |
//! |---|---|---|
//! | `startup` | 3m | no line at all since registration |
//! | `idle` | 10m | no line (progress or keep-alive) for the patience: `idle × extend_factor` (2) before the first completed write tool (`Write`, `Edit`, `MultiEdit`, `NotebookEdit`) and while utilization ≥ `high_utilization` (0.9); else `idle` |
//! | `no_progress` | 30m | no progress for this long, keep-alives or not; while an MCP tool call is outstanding, never before the call's start + where Claude Code gives up on it (1,800 s by default) + 30 s ([`McpLimits`]) |
//! | `linger` | 11m | a `result` came, then no progress, and the stream has not ended; not while the session waits for its host (a stream-json reader whose host input is open, [`SessionConfig::with_host_input`]: from the end of that input) |
//! | `ceiling` | none | total age (checked first; wins over everything) |
//! | `output_blocked` | 30m | not a deadline of the registry: the host's reader took no byte for this long while output waited for it ([`reader_wait`], the one rule a host applies where it writes: it then stops the child); `None`: never. While the host cannot hand the output on ([`Registry::output_blocked`]), the idle and no-progress clocks stand still |
//! | `busy_cap` | 2h | not a kill of its own: while a tool call is outstanding and its processes are busy (the host's samples of the tree, [`evidence`]), the `no_progress` kill waits, at most this long after the last progress |
//! | `max_rss` | none | the process tree's resident memory above this for 5 s (kill `memory`) |
//! | `warn_at` | 0.8 | not a kill: one [`Event::Stalling`] per quiet spell when the idle or no-progress clock passes this fraction of its limit |
//! | `task_silence` | none (the idle patience) | a background task's own deadline, from its last sign of life: past it the task is silent ([`Event::TaskSilent`]); the idle kill waits for every outstanding task's deadline and is `task_silent` while tasks are outstanding |
//! | `control_timeout` | 2m | the host's control request (not `initialize`) got no `control_response` for this long (kill `unanswered`) |
//!
//! Every boundary is inclusive: the kill comes exactly at the deadline, not at a later tick.
//! Before the first line only `startup` and `ceiling` apply; once settled only `linger` and
//! `ceiling` (new progress un-settles; keep-alives do not). A human wait moves the idle and
//! no-progress deadlines by the paused time; the ceiling and the linger keep running (startup
//! cannot be pending: the wait begins with a line). When the base idle passes while patience is
//! extended, [`Event::Extended`] is reported once per quiet spell (`high_utilization` wins over
//! `pre_write`); when the extension is withdrawn (the first write lands, or
//! [`Registry::set_utilization`] drops below the threshold) a session already past its base idle
//! is killed at that instant. Ties on one instant go to the first of ceiling, startup, linger,
//! idle, no_progress, memory, task_silent, wakeup_missed, unanswered. Every option can be set
//! per registry and overridden per session
//! ([`SessionConfig`]).
//!
//! **The MCP floor.** Claude Code aborts an MCP tool call that sent no response or progress
//! for its idle limit (1,800 s for a stdio server by default, checked on its 30 s heartbeat
//! tick), hands the model an `is_error` tool result, and the session goes on. A plain 30-minute
//! no-progress limit counted from the `tool_use` fired 0.3 s before that (killed at 1,800.9 s,
//! Claude Code's own abort at 1,801.2 s). So while an MCP call is outstanding (from its
//! `tool_use`, or from a heartbeat naming an `mcp__…` tool, until its `tool_result` or a
//! `result`), the no-progress kill comes no earlier than the call's start plus the point where
//! Claude Code gives up on it plus a margin of at least one heartbeat tick (30 s). The host
//! derives the give-up point from the child's environment and MCP config ([`McpLimits`]); a
//! server whose calls Claude Code never aborts sets no floor. A kill names the MCP call in
//! flight ([`Kill::mcp_call`]).
//!
//! # Outcomes
//!
//! [`Registry::end`] (the stream ended or the process exited) emits one [`Event::Ended`] with:
//!
//! - [`Outcome::Success`]: the last `result` was a success;
//! - [`Outcome::ErrorResult`]: the last `result` had `is_error: true` or a non-success subtype
//!   (the exhausted `max_output_tokens` case has subtype `success` and `is_error: true`);
//! - [`Outcome::Killed`]: the watchdog killed the session first (also when `end` comes after the
//!   kill);
//! - [`Outcome::NoResult`]: the stream ended without a `result`;
//! - [`Outcome::Incomplete`]: a success `result` with `is_error: false` and
//!   `stop_reason: "tool_use"` (exited mid-task).
//!
//! With several results (a multi-turn session) the last one decides. A kill itself emits
//! [`Event::Killed`] once and is never reported again.
//!
//! # Example: the one entry point
//!
//! A host (the supervisor, the shared `Watchdog`, replay, the language bindings) registers a
//! session, hands the [`Registry`] each stdout line once with the instant it was read, sleeps
//! until [`Registry::poll_timeout`], and reads everything that follows from the lines as
//! events and values: kills, warnings, the rate-limit reading, the tally of the session's
//! work, how it ended.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use watchdog_core::facts::Activity;
//! use watchdog_core::{Event, KillKind, Limits, LineView, Registry, SessionConfig};
//!
//! let t0 = Instant::now(); // any base instant: time is only ever passed in
//! let mut registry = Registry::new(Limits::default());
//! registry.set_wall_clock(t0, 1_900_000_000_000); // rate limits reset at wall times
//! let id = registry.register(t0, SessionConfig::default().with_tally(true));
//!
//! let line = br#"{"type":"system","subtype":"init","session_id":"abc"}"#;
//! registry.observe(t0, id, &LineView::parse(line).unwrap());
//! let tool = br#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}"#;
//! registry.observe_line(t0, id, tool);
//! let frame = br#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","rateLimitType":"five_hour","utilization":0.93,"resetsAt":1900003600}}"#;
//! registry.observe_line(t0, id, frame);
//!
//! // Nothing but pings from now on: keep-alives, not progress.
//! let ping = br#"{"type":"stream_event","event":{"type":"ping"}}"#;
//! for s in (30..1800).step_by(30) {
//!     registry.observe_line(t0 + Duration::from_secs(s), id, ping);
//! }
//!
//! // The host sleeps until poll_timeout, then hands the instant back.
//! while let Some(at) = registry.poll_timeout() {
//!     registry.handle_timeout(at);
//!     if registry.kill(id).is_some() {
//!         break;
//!     }
//! }
//! let (mut kills, mut warnings) = (Vec::new(), Vec::new());
//! while let Some(event) = registry.poll_event() {
//!     match event {
//!         Event::Killed(kill) => kills.push((kill.kind, kill.elapsed)),
//!         Event::RateLimit { event, .. } => warnings.push(event.to_string()),
//!         _ => {}
//!     }
//! }
//! assert_eq!(kills, [(KillKind::NoProgress, Duration::from_secs(30 * 60))]);
//! assert_eq!(warnings.len(), 1, "the rate-limit warning, said once: {warnings:?}");
//! assert_eq!(registry.utilization(), Some(0.93));
//! let tally = registry.tally(id).unwrap();
//! assert_eq!(*tally.activity(), Activity::Tool("Bash".into()));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod classify;
pub mod config;
mod deadline_queue;
mod dialect;
pub mod ending;
mod event;
pub mod evidence;
pub mod facts;
pub mod mcp;
mod record;
mod registry;
mod session;
pub mod synthetic;
mod time;
pub mod transcript;
mod view;
mod wall;

pub use classify::{classify, classify_line, Class, LineKind, Signal};
pub use config::limits::Limits;
pub use config::mcp::McpLimits;
pub use config::session::SessionConfig;
pub use config::values::ConfigError;
pub use dialect::{Dialect, GrammarRow, SessionDialect};
pub use event::{
    Backoff, Event, ExtendReason, Kill, KillKind, McpCall, Outcome, OutcomeKind, Outstanding,
    RequestNote, SessionId, StallClock, TaskNote, WakeupNote, WakeupTool,
};
pub use record::{ChildExit, LineCounts, RunRecord, Stage};
pub use registry::{Registry, Seed, SessionSnapshot, TreeWant};
pub use view::{ContentBlock, Field, LineView, RawJson, Unparseable};
pub use wall::{format_iso_ms, parse_iso_ms, WallMs};

/// The instant every call of the core takes.
///
/// On every target with an OS clock this is [`std::time::Instant`] itself, so hosts pass the
/// instants they read and nothing changes for them. On bare WebAssembly
/// (`wasm32-unknown-unknown`, the one core of the in-process Node API) std's `Instant` cannot
/// be made at all (`Instant::now` panics and there is no other constructor), so there it is a
/// point on the host's own clock, made from the host's number with `Instant::from_origin`,
/// with the same arithmetic. The core never reads a clock itself either way: time is a
/// parameter.
pub use time::Instant;

pub mod rate_limit;

pub mod reader_wait;

pub mod recovery;

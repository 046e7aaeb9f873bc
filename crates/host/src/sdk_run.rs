//! One Agent SDK session as its host reads it, folded, sans-IO ([`SdkRun`]): the host (the
//! Temporal helpers of both packages) feeds each message `query()` yields with the instant it
//! read it, and asks what follows. Every SDK host uses it, so none restates a rule:
//!
//! - the session's id, and each **progress** (a line the core classifies as progress, once the
//!   next line shows it was not the start of an interruption: the watchdog's kill ladder
//!   begins with an interrupt, after which Claude Code reports its partial reply and the
//!   [interrupt marker](watchdog_core::transcript::INTERRUPT_MARKER), the end of a stall);
//! - whether the turn was **interrupted**, and **the watchdog's kill** (the drop-in's
//!   [synthetic result](watchdog_core::synthetic));
//! - whether the session is **alive** ([`SdkRun::alive`]): the core's own deadlines, under the
//!   drop-in's policy, with every hold the drop-in may grant (a busy tool is presumed busy: the
//!   fold cannot sample the tree), plus an allowance for the drop-in's kill to arrive. While it
//!   is, the host heartbeats on a timer, so an orchestrator never gives up on a session the
//!   watchdog lets run (Claude Code prints nothing while it waits out an announced back-off,
//!   and a busy tool only keep-alives); once it is not, the drop-in has failed to end it and
//!   the host stops heartbeating, so the orchestrator's heartbeat timeout ends the attempt;
//! - at the end, **how it ended** ([`SdkRun::finish`]: the core's [`RunEnd`], the precedence
//!   `run` exits by: the watchdog's kill first, even after a success `result`) and the typed
//!   failure a retrying host raises ([`Failure`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use watchdog_core::config::MAX_DURATION;
use watchdog_core::ending::{Failure, RunEnd, StoppedBy};
use watchdog_core::facts::ResultFacts;
use watchdog_core::mcp::McpSetup;
use watchdog_core::synthetic::SyntheticKill;
use watchdog_core::transcript::Entry;
use watchdog_core::{
    Event, Instant, LineKind, LineView, Outcome, Registry, SessionConfig, SessionId, Signal, WallMs,
};

use crate::options::SessionPolicy;

/// How long the drop-in's kill ladder takes at most before its synthetic result is written,
/// beyond its grace: the interrupt's own wait.
const INTERRUPT_WAIT: Duration = Duration::from_secs(2);

/// What one message told ([`SdkRun::observe`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Step {
    /// A progress confirmed by this message (it showed the one before was no interruption):
    /// the instant of that progress.
    pub progress: Option<Instant>,
    /// This message is the interrupt marker: the turn was stopped.
    pub interrupted: bool,
    /// This message is the watchdog's synthetic result ([`SdkRun::kill`]).
    pub kill: bool,
}

/// How an SDK session ended ([`SdkRun::finish`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SdkEnding {
    /// How it ended: the precedence `run` exits by.
    pub end: RunEnd,
    /// The typed failure a retrying host raises; `None` for a success.
    pub failure: Option<Failure>,
    /// The watchdog's kill, as its synthetic result said it.
    pub kill: Option<SyntheticKill>,
    /// The last `result` of Claude Code's own, if one came.
    pub result: Option<ResultFacts>,
}

impl SdkEnding {
    /// The ending's name ([`RunEnd::name`]); a kill this build does not name goes by the
    /// kind its synthetic result says (the failure table may know it: `output`).
    pub fn name(&self) -> &str {
        match (&self.kill, self.end) {
            (Some(k), RunEnd::KilledOther) => &k.kind,
            _ => self.end.name(),
        }
    }

    /// One sentence saying how it ended, for the host's error: the kill's own sentence, or
    /// what the result (or its absence) says. Empty for a success.
    pub fn message(&self) -> String {
        let subtype = self.result.as_ref().and_then(|r| r.subtype.as_deref());
        match (&self.kill, self.end) {
            (Some(k), _) => format!("watchdog {}: {}", k.kind, k.reason),
            (None, RunEnd::Success) => String::new(),
            (None, RunEnd::NoResult) => "the session ended without a result".into(),
            (None, RunEnd::Incomplete) => {
                "the session stopped mid-task (a success result on tool_use)".into()
            }
            (None, _) => format!(
                "the session ended with an error result ({})",
                subtype.unwrap_or("none")
            ),
        }
    }
}

/// One Agent SDK session, folded (see the [module docs](self)).
#[derive(Debug)]
pub struct SdkRun {
    registry: Registry,
    id: SessionId,
    start: Instant,
    start_wall: WallMs,
    allowance: Duration,
    pending: Option<Instant>,
    last_progress: Option<Instant>,
    interrupted: bool,
    kill: Option<SyntheticKill>,
    /// When the core's deadline under the drop-in's policy passed (the drop-in should have
    /// killed then).
    overdue_from: Option<Instant>,
    /// The host's permission callbacks asked so far (each one's request id).
    asked: u64,
}

impl SdkRun {
    /// A session that starts at `now` (`wall`: the wall-clock time then, ms since the epoch)
    /// under `policy`, the drop-in's, with the MCP limits its environment `mcp_env` implies (as
    /// the drop-in reads them); `margin`: added to the drop-in's kill ladder before the session
    /// counts as not alive. `keep_alives`: the host's SDK yields every keep-alive line (the
    /// TypeScript SDK does; the Python SDK drops `tool_progress`, which keeps the idle clock of
    /// a long tool): without them silence is no sign of a hang here, and the fold judges no
    /// progress alone (the drop-in, which sees every line, still judges silence).
    pub fn new(
        now: Instant,
        wall: WallMs,
        policy: &SessionPolicy,
        mcp_env: &BTreeMap<String, String>,
        margin: Duration,
        keep_alives: bool,
    ) -> SdkRun {
        let setup = McpSetup::read(&["claude".to_owned()], mcp_env, Path::new("/"), |_| {
            Err(String::new())
        });
        let (limits, _) = policy.limits.clone().with_mcp_setup(&setup);
        let limits = match keep_alives {
            true => limits,
            false => limits.clone().with_idle(MAX_DURATION).unwrap_or(limits),
        };
        let mut registry = Registry::new(limits);
        registry.set_wall_clock(now, wall);
        // The SDK keeps the session's input open (its control channel): after a `result` the
        // session waits for its host, as the drop-in sees it.
        let config = SessionConfig::default()
            .with_host_input(true)
            .with_busy_tools_presumed(true);
        let id = registry.register(now, config);
        SdkRun {
            registry,
            id,
            start: now,
            start_wall: wall,
            allowance: INTERRUPT_WAIT
                .saturating_add(policy.drop_in_grace())
                .saturating_add(margin),
            pending: None,
            last_progress: None,
            interrupted: false,
            kill: None,
            overdue_from: None,
            asked: 0,
        }
    }

    /// [`SdkRun::new`] under the policy of the session's environment `vars` (its
    /// `AGENT_WATCHDOG_*` variables over the worker's, as the drop-in reads them); the error
    /// names a variable the drop-in would refuse.
    pub fn from_env(
        now: Instant,
        wall: WallMs,
        vars: &BTreeMap<String, String>,
        margin: Duration,
        keep_alives: bool,
    ) -> Result<SdkRun, String> {
        let policy = SessionPolicy::from_env(vars)?;
        Ok(SdkRun::new(now, wall, &policy, vars, margin, keep_alives))
    }

    /// Fold one message (a stream-json line: the TypeScript SDK's message as JSON, the Python
    /// SDK's as its binding writes it) read at `now`.
    pub fn observe(&mut self, now: Instant, line: &[u8]) -> Step {
        let mut step = Step::default();
        let Ok(view) = LineView::parse(line) else {
            self.registry.observe_line(now, self.id, line);
            return step;
        };
        if let Some(kill) = SyntheticKill::read(&view) {
            // The drop-in's, not Claude Code's: not a result of the session.
            self.pending = None;
            self.kill.get_or_insert(kill);
            step.kill = true;
            return step;
        }
        let class = self.registry.observe(now, self.id, &view);
        let is_user = class.kind == LineKind::User;
        if is_user && Entry::parse(line).is_some_and(|e| e.is_interrupt()) {
            self.pending = None;
            self.interrupted = true;
            step.interrupted = true;
            return step;
        }
        if class.kind == LineKind::Result {
            step.progress = self.confirm();
        } else if class.signal == Signal::Progress {
            if matches!(class.kind, LineKind::Assistant | LineKind::User) {
                // A new turn after an interruption.
                self.interrupted = false;
            }
            if !self.interrupted {
                step.progress = self.confirm();
                self.pending = Some(now);
            }
        }
        step
    }

    fn confirm(&mut self) -> Option<Instant> {
        let p = self.pending.take()?;
        self.last_progress = Some(p);
        Some(p)
    }

    /// The host's permission callback was called at `now` (the SDK answers Claude Code's
    /// `can_use_tool` request itself: the request never reaches `query()`'s messages): a human
    /// wait holds the clocks, as the drop-in sees the request, until the answer
    /// ([`SdkRun::permission_answered`] with the id returned).
    pub fn permission_asked(&mut self, now: Instant) -> u64 {
        self.asked += 1;
        let line = format!(
            r#"{{"type":"control_request","request_id":"sdk-run-{}","request":{{"subtype":"can_use_tool"}}}}"#,
            self.asked
        );
        self.registry.observe_line(now, self.id, line.as_bytes());
        self.asked
    }

    /// The permission callback `asked` answered at `now`: its human wait ends.
    pub fn permission_answered(&mut self, now: Instant, asked: u64) {
        let line = format!(
            r#"{{"type":"control_response","response":{{"request_id":"sdk-run-{asked}","subtype":"success"}}}}"#
        );
        if let Ok(view) = LineView::parse(line.as_bytes()) {
            self.registry.observe_input(now, self.id, &view);
        }
    }

    /// Claude Code's session id, once a line named it.
    pub fn session_id(&self) -> Option<&str> {
        self.registry.claude_session_id(self.id).map(|s| s.as_str())
    }

    /// The last confirmed progress, if any.
    pub fn last_progress(&self) -> Option<Instant> {
        self.last_progress
    }

    /// `at` as wall-clock ms since the epoch (on the clock of [`SdkRun::new`]'s `wall`).
    pub fn wall_ms(&self, at: Instant) -> WallMs {
        let since = at.saturating_duration_since(self.start);
        self.start_wall
            .saturating_add(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
    }

    /// Whether the last line said the turn was interrupted (and no new turn began).
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// The watchdog's kill, once its synthetic result came.
    pub fn kill(&self) -> Option<&SyntheticKill> {
        self.kill.as_ref()
    }

    /// Whether the session is alive at `now`: the watchdog beside the host (the drop-in, under
    /// the same policy) still lets it run, or its kill may still be on its way (the drop-in's
    /// ladder and the margin). A session the watchdog killed is alive until its stream ends.
    pub fn alive(&mut self, now: Instant) -> bool {
        self.registry.handle_timeout(now);
        while let Some(event) = self.registry.poll_event() {
            if let Event::Killed(kill) = event {
                self.overdue_from.get_or_insert(kill.at);
            }
        }
        match self.overdue_from {
            Some(_) if self.kill.is_some() => true,
            Some(at) => now < at + self.allowance,
            None => true,
        }
    }

    /// When [`SdkRun::alive`] may next change (the core's next deadline, or the end of the
    /// allowance after it); `None`: not before the next message.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.kill.is_some() {
            return None;
        }
        match self.overdue_from {
            Some(at) => Some(at + self.allowance),
            None => self.registry.poll_timeout(),
        }
    }

    /// The stream ended at `now`: how the session ended. The watchdog's kill is the ending
    /// whatever came before it; else the last `result` of Claude Code's own (a success that
    /// stopped on `tool_use` is `incomplete`), or none.
    pub fn finish(&mut self, now: Instant) -> SdkEnding {
        self.registry.end(now, self.id);
        let result = self.registry.result(self.id).cloned();
        let end = match &self.kill {
            Some(k) => k.kill_kind().map_or(RunEnd::KilledOther, RunEnd::Killed),
            None => {
                let outcome = result
                    .clone()
                    .map_or(Outcome::NoResult, ResultFacts::into_outcome);
                RunEnd::of(&outcome, StoppedBy::Child)
            }
        };
        let failure = match (&self.kill, end) {
            (Some(k), RunEnd::KilledOther) => Some(watchdog_core::ending::failure(&k.kind)),
            _ => end.retry(),
        };
        SdkEnding {
            end,
            failure,
            kill: self.kill.clone(),
            result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant as StdInstant;

    const INIT: &str =
        r#"{"type":"system","subtype":"init","session_id":"90455ab9-05b5-4ba0-9d10-01a53fd0bcdc"}"#;
    const TOOL: &str = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}"#;
    const TOOL_RESULT: &str = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#;
    const TEXT: &str =
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Working on "}]}}"#;
    const MARKER: &str = r#"{"type":"user","message":{"content":[{"type":"text","text":"[Request interrupted by user]"}]}}"#;
    const PING: &str = r#"{"type":"stream_event","event":{"type":"ping"}}"#;
    const SUCCESS: &str =
        r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn"}"#;
    const MID_TASK: &str =
        r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"tool_use"}"#;

    fn ours(kind: &str) -> String {
        format!(
            r#"{{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"watchdog_{kind}","result":"agent-watchdog killed claude ({kind})"}}"#
        )
    }

    fn policy(vars: &[(&str, &str)]) -> SessionPolicy {
        SessionPolicy::from_env(vars.iter().copied()).unwrap()
    }

    fn run(t0: StdInstant, vars: &[(&str, &str)]) -> SdkRun {
        SdkRun::new(
            t0,
            1_900_000_000_000,
            &policy(vars),
            &BTreeMap::new(),
            Duration::from_secs(1),
            true,
        )
    }

    const fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn progress_is_confirmed_by_the_next_line_and_an_interruption_is_not_progress() {
        let t0 = StdInstant::now();
        let mut r = run(t0, &[]);
        assert_eq!(r.observe(t0, INIT.as_bytes()).progress, None);
        assert_eq!(r.session_id(), Some("90455ab9-05b5-4ba0-9d10-01a53fd0bcdc"));
        // init is progress; the tool call confirms it, the tool result confirms the call.
        assert_eq!(r.observe(t0 + s(1), TOOL.as_bytes()).progress, Some(t0));
        assert_eq!(r.observe(t0 + s(2), PING.as_bytes()).progress, None);
        assert_eq!(
            r.observe(t0 + s(3), TOOL_RESULT.as_bytes()).progress,
            Some(t0 + s(1))
        );
        // The partial reply, then the marker: neither is progress.
        assert_eq!(
            r.observe(t0 + s(4), TEXT.as_bytes()).progress,
            Some(t0 + s(3))
        );
        let step = r.observe(t0 + s(5), MARKER.as_bytes());
        assert!(step.interrupted && step.progress.is_none());
        assert_eq!(r.last_progress(), Some(t0 + s(3)));
        assert_eq!(r.wall_ms(t0 + s(3)), 1_900_000_003_000);
        let kill = r.observe(t0 + s(6), ours("idle").as_bytes());
        assert!(kill.kill);
        assert_eq!(r.kill().unwrap().kind, "idle");
        let end = r.finish(t0 + s(7));
        assert_eq!(end.end, RunEnd::Killed(watchdog_core::KillKind::Idle));
        let f = end.failure.unwrap();
        assert_eq!((f.error_type, f.retryable), ("WatchdogIdle", true));
        assert_eq!(
            end.message(),
            "watchdog idle: agent-watchdog killed claude (idle)"
        );
    }

    /// The helpers' ending is run's: a kill after a success is the kill, a success that
    /// stopped on tool_use is incomplete, no result is no_result.
    #[test]
    fn the_ending_is_runs() {
        let t0 = StdInstant::now();
        let end = |lines: &[&str]| {
            let mut r = run(t0, &[]);
            for l in lines {
                r.observe(t0, l.as_bytes());
            }
            r.finish(t0).end
        };
        let linger = ours("linger");
        assert_eq!(
            end(&[INIT, TEXT, SUCCESS, &linger]),
            RunEnd::Killed(watchdog_core::KillKind::Linger)
        );
        assert_eq!(end(&[INIT, TEXT, SUCCESS]), RunEnd::Success);
        assert_eq!(end(&[INIT, TOOL, MID_TASK]), RunEnd::Incomplete);
        let mut r = run(t0, &[]);
        r.observe(t0, MID_TASK.as_bytes());
        assert_eq!(
            r.finish(t0).message(),
            "the session stopped mid-task (a success result on tool_use)"
        );
        let mut r = run(t0, &[]);
        let error = r#"{"type":"result","subtype":"error_max_turns","is_error":true}"#;
        r.observe(t0, error.as_bytes());
        assert_eq!(
            r.finish(t0).message(),
            "the session ended with an error result (error_max_turns)"
        );
        assert_eq!(end(&[INIT, TEXT]), RunEnd::NoResult);
        let newer = ours("somethingnew");
        let e = end(&[INIT, &newer]);
        assert_eq!(e, RunEnd::KilledOther);
        assert_eq!(e.retry().unwrap().error_type, "WatchdogKill");
        // A kind the table names goes by its own row.
        let mut r = run(t0, &[]);
        r.observe(t0, ours("output").as_bytes());
        let e = r.finish(t0);
        assert_eq!(e.name(), "output");
        assert_eq!(e.failure.unwrap().error_type, "WatchdogOutput");
    }

    /// Alive while the drop-in lets the session run, every hold included; not alive once its
    /// kill should have come and did not.
    #[test]
    fn alive_through_every_hold_the_drop_in_grants_and_not_past_its_kill() {
        let vars = [
            ("AGENT_WATCHDOG_IDLE", "40s"),
            ("AGENT_WATCHDOG_EXTEND_FACTOR", "1"),
            ("AGENT_WATCHDOG_NO_PROGRESS", "5s"),
            ("AGENT_WATCHDOG_BUSY_CAP", "60s"),
            ("AGENT_WATCHDOG_GRACE", "1s"),
        ];
        let t0 = StdInstant::now();
        // A busy tool: the tool's keep-alives every 30 s, no progress for 50 s.
        let mut r = run(t0, &vars);
        r.observe(t0, INIT.as_bytes());
        r.observe(t0, TOOL.as_bytes());
        let hb = r#"{"type":"tool_progress","tool_use_id":"h","tool_name":"Bash","parent_tool_use_id":"t1","elapsed_time_seconds":30}"#;
        r.observe(t0 + s(30), hb.as_bytes());
        assert!(
            r.alive(t0 + s(50)),
            "held by the busy tool past no_progress"
        );
        r.observe(t0 + s(50), TOOL_RESULT.as_bytes());
        r.observe(t0 + s(51), SUCCESS.as_bytes());
        assert!(
            r.alive(t0 + s(300)),
            "waiting for its host after the result"
        );
        assert_eq!(r.finish(t0 + s(300)).end, RunEnd::Success);

        // An announced back-off: silence for 30 s, longer than no_progress.
        let mut r = run(t0, &vars);
        r.observe(t0, INIT.as_bytes());
        let retry = r#"{"type":"system","subtype":"api_retry","attempt":1,"retry_delay_ms":30000,"error_status":529}"#;
        r.observe(t0 + s(1), retry.as_bytes());
        assert!(r.alive(t0 + s(31)), "the back-off holds both clocks");
        assert!(
            r.alive(t0 + s(35)),
            "no_progress from the back-off's end, plus the allowance"
        );

        // Keep-alives only: the drop-in kills at no_progress (5 s); its kill may take the
        // interrupt's wait, the grace and the margin (2 + 1 + 1 s) to arrive.
        let mut r = run(t0, &vars);
        r.observe(t0, INIT.as_bytes());
        r.observe(t0 + s(1), TEXT.as_bytes());
        r.observe(t0 + s(2), PING.as_bytes());
        assert!(r.alive(t0 + s(5)));
        assert_eq!(
            r.poll_timeout(),
            Some(t0 + s(6)),
            "the no-progress deadline"
        );
        assert!(r.alive(t0 + s(9)));
        assert!(
            !r.alive(t0 + s(10)),
            "6 s + 4 s: the drop-in failed to end it"
        );
        // Its kill arrives late after all: alive until the stream ends.
        r.observe(t0 + s(11), ours("no_progress").as_bytes());
        assert!(r.alive(t0 + s(12)));

        // A human wait the session announces pauses the clocks for as long as it takes.
        let mut r = run(t0, &vars);
        r.observe(t0, INIT.as_bytes());
        let wait =
            r#"{"type":"system","subtype":"session_state_changed","state":"requires_action"}"#;
        r.observe(t0 + s(1), wait.as_bytes());
        assert!(r.alive(t0 + s(3600)), "unbounded while a human wait holds");

        // A host whose SDK drops the tool's keep-alives (Python's): a 50 s silent busy tool is
        // judged by no progress alone, held by the busy-tool presumption.
        let mut r = SdkRun::new(t0, 0, &policy(&vars), &BTreeMap::new(), s(1), false);
        r.observe(t0, INIT.as_bytes());
        r.observe(t0, TOOL.as_bytes());
        assert!(
            r.alive(t0 + s(50)),
            "silence is no sign of a hang without the keep-alives"
        );
        assert!(
            !r.alive(t0 + s(70)),
            "past busy_cap (60 s) and the allowance"
        );
        let mut seen = run(t0, &vars);
        seen.observe(t0, INIT.as_bytes());
        seen.observe(t0, TOOL.as_bytes());
        assert!(
            !seen.alive(t0 + s(50)),
            "with them, 40 s of silence is the idle kill"
        );

        // The host's own permission callback: the same hold, until it answers.
        let mut r = run(t0, &vars);
        r.observe(t0, INIT.as_bytes());
        let asked = r.permission_asked(t0 + s(1));
        assert!(r.alive(t0 + s(3600)), "held while the callback runs");
        r.permission_answered(t0 + s(3600), asked);
        assert!(
            r.alive(t0 + s(3600) + s(5)),
            "no_progress runs again from the answer"
        );
        assert!(
            !r.alive(t0 + s(3600) + s(60)),
            "the clocks run again from the answer"
        );
    }
}

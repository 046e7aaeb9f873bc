//! The registry driven by an arbitrary sequence of (time step, operation) pairs, checking its
//! timing invariants against a simple bookkeeping of our own:
//!
//! - a kill is dated no later than the call that reported it, no earlier than the previous
//!   call's instant, and never before its deadline: `ceiling` exactly at registration + ceiling,
//!   `startup` exactly at registration + startup with no line before, `idle` no earlier than
//!   the last line + idle (`task_silent` too), `no_progress` and `linger` no earlier than the
//!   last progress + their limit, `unanswered` no earlier than the host's first control request
//!   + the control timeout, `wakeup_missed` only after a line declared a due time;
//! - at most one kill and at most one end per session; `kill(id)` agrees with the events;
//! - after every call at `now`, `poll_timeout` is later than `now` (or `None`).
//!
//! Input: a sequence of steps. Each step is one op byte: the low 4 bits are the time step in ms,
//! the high 4 bits pick the operation (see `step`); some operations read one more byte, and a raw
//! line runs to the next newline. The seed `\x05` + line is "after 5 ms, session 0 prints line".
#![no_main]
use std::collections::HashSet;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use watchdog_core::{
    Dialect, Event, KillKind, Limits, LineView, Registry, SessionConfig, SessionDialect, SessionId,
};

const N: usize = 4;

/// Real line shapes (from testdata/captures), trimmed to the fields the core reads.
const ALPHABET: &[&str] = &[
    r#"{"type":"system","subtype":"init","session_id":"s-1","tools":["Bash","Write"]}"#,
    r#"{"type":"system","subtype":"status","status":"requesting","session_id":"s-1"}"#,
    r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"session_id":"s-1"}"#,
    r#"{"type":"stream_event","event":{"type":"ping"},"session_id":"s-1"}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"w1","name":"Write","input":{}}]},"parent_tool_use_id":null,"session_id":"s-1"}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"w1","content":"ok"}]},"parent_tool_use_id":null,"session_id":"s-1"}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"w1","content":"no","is_error":true}]},"session_id":"s-1"}"#,
    r#"{"type":"tool_progress","tool_use_id":"b1","tool_name":"Bash","elapsed_time_seconds":30,"session_id":"s-1"}"#,
    r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","utilization":0.95,"rateLimitType":"five_hour"},"session_id":"s-1"}"#,
    r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":7,"error_status":429,"session_id":"s-1"}"#,
    r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Write","input":{}}}"#,
    r#"{"type":"control_request","request":{"subtype":"can_use_tool","tool_name":"Bash"}}"#,
    r#"{"type":"control_cancel_request","request_id":"r1"}"#,
    r#"{"type":"system","subtype":"session_state_changed","state":"requires_action","session_id":"s-1"}"#,
    r#"{"type":"system","subtype":"session_state_changed","state":"running","session_id":"s-1"}"#,
    r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","session_id":"s-1"}"#,
    r#"{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s-1"}"#,
    r#"{"type":"system","subtype":"thinking_tokens","session_id":"s-1"}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]},"parent_tool_use_id":"t9","session_id":"s-2"}"#,
    r#"{"type":"stream_event","event":{"type":"content_block_delta"},"abandoned_blocks":[1]}"#,
    r#"{"type":"thread.started","thread_id":"t-1"}"#,
    r#"{"type":"turn.started"}"#,
    r#"{"type":"item.started","item":{"id":"i1","type":"command_execution","command":"make","status":"in_progress"}}"#,
    r#"{"type":"item.completed","item":{"id":"i1","type":"command_execution","exit_code":0,"status":"completed"}}"#,
    r#"{"type":"item.completed","item":{"id":"i2","type":"file_change","status":"completed"}}"#,
    r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
    r#"{"type":"turn.completed","usage":{}}"#,
    r#"{"type":"turn.failed","error":{"message":"x"}}"#,
    r#"{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}"#,
    r#"{"type":"tool_use","sessionID":"ses_1","part":{"tool":"write","state":{"status":"completed"}}}"#,
    r#"{"type":"step_finish","sessionID":"ses_1","part":{"reason":"tool-calls"}}"#,
    r#"{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop"}}"#,
    r#"{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"statusCode":500}}}"#,
    // Round 5's waits: a background task's life, a declared wakeup (due 20 ms after the
    // result line's own timestamp), a cron job, a hook, the CLI's answer to the host.
    r#"{"type":"system","subtype":"task_started","task_id":"a1","tool_use_id":"ag1","description":"d","is_backgrounded":true,"task_type":"local_agent","session_id":"s-1"}"#,
    r#"{"type":"system","subtype":"task_progress","task_id":"a1","tool_use_id":"ag1","session_id":"s-1"}"#,
    r#"{"type":"system","subtype":"task_notification","task_id":"a1","tool_use_id":"ag1","status":"completed","session_id":"s-1"}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"wk1","name":"ScheduleWakeup","input":{"delaySeconds":60}}]},"parent_tool_use_id":null,"session_id":"s-1"}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"wk1","content":"ok"}]},"parent_tool_use_id":null,"session_id":"s-1","timestamp":"2026-12-07T00:00:00.000Z","tool_use_result":{"scheduledFor":1796601600020}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"cr1","name":"CronCreate","input":{"cron":"* * * * *"}}]},"parent_tool_use_id":null,"session_id":"s-1"}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"cr1","content":"ok"}]},"parent_tool_use_id":null,"session_id":"s-1","timestamp":"2026-12-07T00:00:00.000Z","tool_use_result":{"id":"j1","nextFireAt":1796601600030}}"#,
    r#"{"type":"system","subtype":"hook_started","hook_id":"k1","hook_name":"SessionStart:startup","session_id":"s-1"}"#,
    r#"{"type":"system","subtype":"hook_response","hook_id":"k1","outcome":"success","session_id":"s-1"}"#,
    r#"{"type":"control_response","response":{"subtype":"success","request_id":"h1","response":{}}}"#,
    r#"{"type":"assist"#,
    "not json at all",
];

/// Host-side lines (`observe_input`): answers to permission requests, and the host's own
/// control requests (the two at the end: `is_request`).
const INPUTS: &[&str] = &[
    r#"{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow"}}}"#,
    r#"{"type":"control_response","response":{"subtype":"success","request_id":"r2"}}"#,
    r#"{"type":"control_request","request_id":"h1","request":{"subtype":"interrupt"}}"#,
    r#"{"type":"control_request","request_id":"h2","request":{"subtype":"get_context_usage"}}"#,
];

/// Whether `INPUTS[i]` is a request of the host's own.
fn is_request(i: usize) -> bool {
    i >= 2
}

fn limits(variant: u8) -> Limits {
    let ms = Duration::from_millis;
    match variant % 2 {
        0 => Limits::default()
            .with_startup(ms(30))
            .and_then(|l| l.with_idle(ms(10)))
            .and_then(|l| l.with_extend_factor(2.0))
            .and_then(|l| l.with_no_progress(ms(40)))
            .and_then(|l| l.with_linger(ms(25)))
            .and_then(|l| l.with_ceiling(Some(ms(200))))
            .and_then(|l| l.with_task_silence(Some(ms(15))))
            .map(|l| l.with_control_timeout(ms(20)))
            .expect("valid"),
        _ => Limits::default()
            .with_startup(ms(12))
            .and_then(|l| l.with_idle(ms(7)))
            .and_then(|l| l.with_extend_factor(1.5))
            .and_then(|l| l.with_no_progress(ms(9)))
            .and_then(|l| l.with_linger(ms(5)))
            .and_then(|l| l.with_high_utilization(0.5))
            .and_then(|l| l.with_warn_at(1.0))
            .expect("valid"),
    }
}

/// Our own bookkeeping of one session (times in ms since the base).
#[derive(Clone, Copy)]
struct Book {
    id: SessionId,
    variant: u8,
    /// How the session's lines must read: its dialect, as the registry resolves it.
    dialect: SessionDialect,
    started: u64,
    first_line: Option<u64>,
    last_line: u64,
    last_progress: u64,
    /// When the host first sent a control request of its own, if it did.
    asked: Option<u64>,
    /// Whether a line that declares a wakeup's due time was fed.
    declared: bool,
    killed: bool,
    ended: bool,
}

struct Harness {
    base: Instant,
    now: u64,
    reg: Registry,
    books: [Book; N],
    limits: [Limits; 2],
    all_killed: HashSet<SessionId>,
    all_ended: HashSet<SessionId>,
}

fn ms_of(base: Instant, t: Instant) -> Duration {
    t.duration_since(base)
}

impl Harness {
    fn at(&self) -> Instant {
        self.base + Duration::from_millis(self.now)
    }

    fn register(&mut self, i: usize, variant: u8) {
        let cfg = if variant.is_multiple_of(2) {
            SessionConfig::default()
        } else {
            SessionConfig::default().with_limits(self.limits[1].clone())
        };
        // A third of the sessions expect Codex, a third opencode (their lines confirm it or
        // choose another), the rest are Claude Code's.
        let (cfg, dialect) = match (variant / 2) % 3 {
            0 => (cfg, SessionDialect::fixed(Dialect::Claude)),
            1 => (
                cfg.with_dialect(Dialect::Codex),
                SessionDialect::expect(Dialect::Codex),
            ),
            _ => (
                cfg.with_dialect(Dialect::Opencode),
                SessionDialect::expect(Dialect::Opencode),
            ),
        };
        let id = self.reg.register(self.at(), cfg);
        self.books[i] = Book {
            id,
            variant: variant % 2,
            dialect,
            started: self.now,
            first_line: None,
            last_line: self.now,
            last_progress: self.now,
            asked: None,
            declared: false,
            killed: false,
            ended: false,
        };
    }

    /// Drain events and check them against the bookkeeping as it was before the call
    /// (`prev_now` is the instant of the previous call).
    fn check(&mut self, prev_now: u64) {
        let now = Duration::from_millis(self.now);
        let prev = Duration::from_millis(prev_now);
        while let Some(e) = self.reg.poll_event() {
            match e {
                Event::Killed(k) => {
                    assert!(self.all_killed.insert(k.id), "second kill of {:?}", k.id);
                    let i = self
                        .books
                        .iter()
                        .position(|b| b.id == k.id)
                        .expect("kill of a live session");
                    let b = self.books[i];
                    assert!(!b.ended, "kill after end: {k:?}");
                    let at = ms_of(self.base, k.at);
                    assert!(at <= now, "kill dated after the call: {at:?} > {now:?}");
                    assert!(
                        at >= prev,
                        "kill dated before the previous call: {at:?} < {prev:?}"
                    );
                    let l = &self.limits[b.variant as usize];
                    let d = Duration::from_millis;
                    match k.kind {
                        KillKind::Ceiling => {
                            let c = l.ceiling().expect("a ceiling kill needs a ceiling");
                            assert_eq!(at, d(b.started) + c, "ceiling kill not at its deadline");
                        }
                        KillKind::Startup => {
                            assert_eq!(at, d(b.started) + l.startup(), "startup kill off");
                            assert!(
                                b.first_line.is_none_or(|f| d(f) >= at),
                                "startup kill after a line: {k:?}"
                            );
                        }
                        // An idle kill with background tasks outstanding is task_silent, no
                        // earlier than the idle kill.
                        KillKind::Idle | KillKind::TaskSilent => assert!(
                            at >= d(b.last_line) + l.idle(),
                            "idle kill at {at:?} before last line {} + idle {:?}",
                            b.last_line,
                            l.idle()
                        ),
                        KillKind::NoProgress => assert!(
                            at >= d(b.last_progress) + l.no_progress(),
                            "no-progress kill at {at:?} before last progress {} + {:?}",
                            b.last_progress,
                            l.no_progress()
                        ),
                        KillKind::Linger => assert!(
                            at >= d(b.last_progress) + l.linger(),
                            "linger kill at {at:?} before last progress {} + {:?}",
                            b.last_progress,
                            l.linger()
                        ),
                        KillKind::Unanswered => {
                            let t = l
                                .control_timeout()
                                .expect("an unanswered kill needs a bound");
                            let asked = b.asked.expect("an unanswered kill needs a request");
                            assert!(
                                at >= d(asked) + t,
                                "unanswered kill at {at:?} before the first request {asked} + {t:?}"
                            );
                        }
                        KillKind::WakeupMissed => {
                            assert!(b.declared, "a missed wakeup nobody declared: {k:?}")
                        }
                        // The host-fed kinds (output blocked, memory) need facts this
                        // sequence never gives; any other kind has no deadline to check.
                        _ => {}
                    }
                    assert!(at >= d(b.started), "kill before registration");
                    self.books[i].killed = true;
                }
                Event::Ended { id, .. } => {
                    assert!(self.all_ended.insert(id), "second end of {id:?}");
                }
                _ => {}
            }
        }
        for b in &self.books {
            assert_eq!(
                self.reg.kill(b.id).is_some(),
                b.killed,
                "kill(id) disagrees with the events for {:?}",
                b.id
            );
        }
        if let Some(next) = self.reg.poll_timeout() {
            assert!(
                next > self.at(),
                "poll_timeout {:?} not after now {:?}",
                ms_of(self.base, next),
                now
            );
        }
    }

    /// A line of session `i` was fed at `now` (after the check of this call's events).
    fn note_line(&mut self, i: usize, progress: bool) {
        let b = &mut self.books[i];
        if b.killed || b.ended {
            return;
        }
        b.first_line.get_or_insert(self.now);
        b.last_line = self.now;
        if progress {
            b.last_progress = self.now;
        }
    }
}

fn next_byte(rest: &mut &[u8]) -> u8 {
    let (&b, t) = rest.split_first().unwrap_or((&0, &[]));
    *rest = t;
    b
}

fn take_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

fuzz_target!(|data: &[u8]| {
    let limits = [limits(0), limits(1)];
    let mut h = Harness {
        base: Instant::now(),
        now: 0,
        reg: Registry::new(limits[0].clone()),
        books: [Book {
            id: Registry::new(Limits::default()).register(Instant::now(), SessionConfig::default()),
            variant: 0,
            dialect: SessionDialect::fixed(Dialect::Claude),
            started: 0,
            first_line: None,
            last_line: 0,
            last_progress: 0,
            asked: None,
            declared: false,
            killed: false,
            ended: false,
        }; N],
        limits,
        all_killed: HashSet::new(),
        all_ended: HashSet::new(),
    };
    for i in 0..N {
        h.register(i, i as u8);
    }
    h.check(0);

    let mut rest = data;
    let mut steps = 0;
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        steps += 1;
        if steps > 2000 {
            break;
        }
        let prev_now = h.now;
        let mut dt = u64::from(op & 0x0f);
        let sel = op >> 4;
        // Each arm: the registry call at `h.now`, then the check, then our bookkeeping.
        match sel {
            0..=7 => {
                let i = (sel & 3) as usize;
                let line: &[u8] = if sel < 4 {
                    let (line, t) = take_line(rest);
                    rest = t;
                    line
                } else {
                    ALPHABET[next_byte(&mut rest) as usize % ALPHABET.len()].as_bytes()
                };
                h.now += dt;
                let class = h.reg.observe_line(h.at(), h.books[i].id, line);
                // The typed path must agree with the raw one, in the session's dialect.
                if let Ok(v) = LineView::parse(line) {
                    if !h.books[i].killed && !h.books[i].ended {
                        assert_eq!(h.books[i].dialect.classify(&v), class);
                        assert_eq!(
                            h.reg.dialect(h.books[i].id),
                            Some(h.books[i].dialect.dialect())
                        );
                    }
                }
                h.check(prev_now);
                let progress = class.signal == watchdog_core::Signal::Progress;
                h.note_line(i, progress);
                let declares = |k: &[u8]| line.windows(k.len()).any(|w| w == k);
                if declares(b"scheduledFor") || declares(b"nextFireAt") {
                    h.books[i].declared = true;
                }
            }
            8 => {
                let b = next_byte(&mut rest);
                let u = match b {
                    255 => None,
                    254 => Some(f64::NAN),
                    _ => Some(f64::from(b) / 200.0),
                };
                h.now += dt;
                h.reg.set_utilization(h.at(), u);
                h.check(prev_now);
            }
            9 => {
                let b = next_byte(&mut rest);
                let i = (b & 3) as usize;
                let tool = [None, Some("Write"), Some("Bash"), Some("Edit")][(b >> 2) as usize & 3];
                h.now += dt;
                h.reg.tool_boundary(h.at(), h.books[i].id, tool);
                h.check(prev_now);
                h.note_line(i, true);
            }
            10 => {
                let i = (next_byte(&mut rest) & 3) as usize;
                h.now += dt;
                h.reg.settle(h.at(), h.books[i].id);
                h.check(prev_now);
                // settle() counts as a first line (startup no longer applies), not as progress.
                let b = &mut h.books[i];
                if !b.killed && !b.ended {
                    b.first_line.get_or_insert(h.now);
                }
            }
            11 => {
                let i = (next_byte(&mut rest) & 3) as usize;
                h.now += dt;
                let outcome = h.reg.end(h.at(), h.books[i].id);
                h.check(prev_now);
                if h.books[i].killed {
                    assert!(
                        matches!(outcome, Some(watchdog_core::Outcome::Killed { .. })),
                        "a killed session ends as killed: {outcome:?}"
                    );
                }
                h.books[i].ended = true;
            }
            12 => {
                let b = next_byte(&mut rest);
                let i = (b & 3) as usize;
                h.now += dt;
                // Any deadline due up to now fires first, as in a host.
                h.reg.handle_timeout(h.at());
                h.check(prev_now);
                let old = h.books[i];
                let kill = h.reg.unregister(old.id);
                assert_eq!(kill.is_some(), old.killed, "unregister returns the kill");
                assert!(
                    h.reg.kill(old.id).is_none(),
                    "an unregistered id is forgotten"
                );
                h.register(i, b >> 2);
                h.check(h.now);
            }
            13 => {
                let b = next_byte(&mut rest);
                let i = (b & 3) as usize;
                let which = (b >> 2) as usize % INPUTS.len();
                let line = INPUTS[which].as_bytes();
                h.now += dt;
                let view = LineView::parse(line).expect("valid input line");
                h.reg.observe_input(h.at(), h.books[i].id, &view);
                h.check(prev_now);
                let book = &mut h.books[i];
                if is_request(which) && !book.killed && !book.ended {
                    book.asked.get_or_insert(h.now);
                }
            }
            14 => {
                h.now += dt;
                h.reg.handle_timeout(h.at());
                h.check(prev_now);
            }
            _ => {
                // A long step: wake at every poll_timeout on the way, as a host would.
                dt = u64::from(next_byte(&mut rest));
                let target = h.now + dt;
                let mut last = h.now;
                while let Some(next) = h.reg.poll_timeout() {
                    let next_ms = ms_of(h.base, next).as_millis() as u64;
                    if next_ms > target {
                        break;
                    }
                    // Deadlines are whole ms here (limits in ms, steps in ms, factor × ms):
                    // ceil keeps the wake-up at or after the deadline.
                    let exact = ms_of(h.base, next);
                    h.now = if exact > Duration::from_millis(next_ms) {
                        next_ms + 1
                    } else {
                        next_ms
                    }
                    .max(h.now);
                    if h.now > target {
                        break;
                    }
                    h.reg.handle_timeout(h.at());
                    h.check(last);
                    last = h.now;
                }
                h.now = target;
                h.reg.handle_timeout(h.at());
                h.check(last);
            }
        }
    }
});

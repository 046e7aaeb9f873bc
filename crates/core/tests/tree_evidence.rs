//! The process tree's rules in virtual time ([`watchdog_core::evidence`]): a busy tool holds
//! the no-progress kill up to the busy cap, a hung one does not, idle is unchanged, the
//! memory guard kills `memory` after 5 s over, a tree that cannot be read leaves the stream
//! alone to decide (the replay of recorded samples: watchdog-host's tests).

mod common;

use std::time::{Duration, Instant};

use common::lines::{tool_result, tool_use, INIT, PING, RESULT_OK, TOOL_PROGRESS};
use common::tree::{limits, proc, ROOT};
use common::{min, sec};
use watchdog_core::evidence::{ProcState, TreeSample};
use watchdog_core::{Event, Kill, KillKind, Limits, Registry, SessionConfig, SessionId};

/// A session on a fresh registry, a tool call `Bash` begun at `t0`.
struct Run {
    reg: Registry,
    id: SessionId,
    t0: Instant,
}

impl Run {
    fn new(limits: Limits) -> Run {
        let t0 = Instant::now();
        let mut reg = Registry::new(limits);
        let id = reg.register(t0, SessionConfig::default().with_tree_evidence(true));
        reg.observe_line(t0, id, INIT.as_bytes());
        reg.observe_line(t0, id, tool_use("toolu_b", "Bash").as_bytes());
        Run { reg, id, t0 }
    }

    fn at(&self, d: Duration) -> Instant {
        self.t0 + d
    }

    /// The child and the tool's shell and `cmd`, sampled at `t`: `cpu` of the tool's
    /// command so far (the tool began at 0).
    fn sample(&mut self, t: Duration, cmd: &str, state: ProcState, cpu: Duration) {
        let s = TreeSample {
            root: ROOT,
            procs: vec![
                proc(ROOT, "claude", ProcState::Asleep, sec(3.0), t + min(1.0)),
                proc(
                    201,
                    "/bin/bash -c -l eval 'x'",
                    ProcState::Asleep,
                    Duration::ZERO,
                    t,
                ),
                proc(202, cmd, state, cpu, t.saturating_sub(sec(0.1))),
            ],
            fault: None,
        };
        let at = self.at(t);
        self.reg.observe_tree(at, self.id, &s);
    }

    fn heartbeat(&mut self, t: Duration) {
        let at = self.at(t);
        self.reg.observe_line(at, self.id, TOOL_PROGRESS.as_bytes());
    }

    /// Every second up to `until`: a heartbeat each 30 s, a sample each second with the
    /// tool's CPU from `cpu(t)`.
    fn drive(
        &mut self,
        until: Duration,
        cmd: &str,
        cpu: impl Fn(Duration) -> (ProcState, Duration),
    ) {
        let mut t = sec(1.0);
        while t <= until && self.kill().is_none() {
            if t.as_secs().is_multiple_of(30) {
                self.heartbeat(t);
            }
            let (state, used) = cpu(t);
            self.sample(t, cmd, state, used);
            t += sec(1.0);
        }
    }

    fn kill(&self) -> Option<&Kill> {
        self.reg.kill(self.id)
    }

    fn killed_at(&self) -> Option<(KillKind, Duration)> {
        self.kill().map(|k| (k.kind, k.at - self.t0))
    }
}

/// A Bash tool burning a core for longer than `--no-progress` is not killed until
/// `--busy-cap`, then `no_progress`, with the hold and the cap said.
#[test]
fn a_busy_tool_is_held_until_the_busy_cap() {
    let mut r = Run::new(limits());
    r.drive(min(200.0), "cargo build", |t| (ProcState::Running, t));
    assert_eq!(r.killed_at(), Some((KillKind::NoProgress, min(120.0))));
    let tree = r.kill().unwrap().tree.as_deref().unwrap();
    assert!(tree.busy && tree.capped);
    assert_eq!(tree.held, min(90.0), "held past the stream's own 30 min");
    assert_eq!(
        tree.named.as_ref().map(|p| p.cmd.as_str()),
        Some("cargo build")
    );
    let tool = tree.tool.as_ref().unwrap();
    assert_eq!((tool.name.as_str(), tool.outstanding), ("Bash", min(120.0)));
}

/// The same tool blocked in `sleep`/`read`: killed at `--no-progress` exactly, naming the
/// blocked command (not its shell) asleep.
#[test]
fn a_hung_tool_is_killed_at_no_progress() {
    let mut r = Run::new(limits());
    r.drive(min(200.0), "git push", |_| (ProcState::Asleep, sec(0.02)));
    assert_eq!(r.killed_at(), Some((KillKind::NoProgress, min(30.0))));
    let tree = r.kill().unwrap().tree.as_deref().unwrap();
    assert!(!tree.busy && !tree.capped);
    assert_eq!(tree.held, Duration::ZERO);
    let named = tree.named.as_ref().unwrap();
    assert_eq!((named.pid, named.state), (202, ProcState::Asleep));
}

/// Busy for 40 minutes, then stuck: killed `--no-progress` after the last busy sample.
#[test]
fn a_tool_that_stops_working_is_killed_after_its_last_busy_sample() {
    let mut r = Run::new(limits());
    let busy_until = min(40.0);
    r.drive(min(200.0), "make", |t| {
        if t <= busy_until {
            (ProcState::Running, t)
        } else {
            (ProcState::Asleep, busy_until)
        }
    });
    assert_eq!(
        r.killed_at(),
        Some((KillKind::NoProgress, busy_until + min(30.0)))
    );
    let tree = r.kill().unwrap().tree.as_deref().unwrap();
    assert!(!tree.busy && !tree.capped);
    assert_eq!(tree.held, min(40.0));
}

/// CPU under the noise floor (a polling loop) is not work.
#[test]
fn cpu_under_the_noise_floor_is_not_busy() {
    let mut r = Run::new(limits());
    // 40 ms a second: 4 % of a core.
    r.drive(min(200.0), "poll", |t| (ProcState::Asleep, t.mul_f64(0.04)));
    assert_eq!(r.killed_at(), Some((KillKind::NoProgress, min(30.0))));
    // 60 ms a second: over the 5 % floor.
    let mut r = Run::new(limits());
    r.drive(min(200.0), "poll", |t| (ProcState::Asleep, t.mul_f64(0.06)));
    assert_eq!(r.killed_at(), Some((KillKind::NoProgress, min(120.0))));
}

/// Bytes moving on the tool's sockets are work, with no CPU to speak of.
#[test]
fn bytes_on_the_tool_s_sockets_are_busy() {
    for (rate, held) in [(4096u64, true), (100, false)] {
        let mut r = Run::new(limits());
        let mut t = sec(1.0);
        while t <= min(200.0) && r.kill().is_none() {
            if t.as_secs().is_multiple_of(30) {
                r.heartbeat(t);
            }
            let mut dl = proc(202, "curl -O x", ProcState::Asleep, Duration::ZERO, t);
            dl.tcp = 1;
            dl.net = Some(t.as_secs() * rate);
            let s = TreeSample {
                root: ROOT,
                procs: vec![dl],
                fault: None,
            };
            let at = r.at(t);
            r.reg.observe_tree(at, r.id, &s);
            t += sec(1.0);
        }
        let want = if held { min(120.0) } else { min(30.0) };
        assert_eq!(
            r.killed_at(),
            Some((KillKind::NoProgress, want)),
            "{rate} B/s"
        );
    }
}

/// A busy process that is not the tool's (an MCP server started before the call) does not
/// hold the kill.
#[test]
fn busy_processes_older_than_the_call_are_not_the_tool_s() {
    let mut r = Run::new(limits());
    let mut t = sec(1.0);
    while t <= min(100.0) && r.kill().is_none() {
        let server = proc(
            300,
            "node mcp-server.js",
            ProcState::Running,
            t,
            t + min(5.0),
        );
        let s = TreeSample {
            root: ROOT,
            procs: vec![server],
            fault: None,
        };
        let at = r.at(t);
        r.reg.observe_tree(at, r.id, &s);
        if t.as_secs().is_multiple_of(30) {
            r.heartbeat(t);
        }
        t += sec(1.0);
    }
    assert_eq!(r.killed_at(), Some((KillKind::NoProgress, min(30.0))));
}

/// `--busy-cap 0`: evidence never holds the kill.
#[test]
fn a_busy_cap_of_zero_never_holds() {
    let mut r = Run::new(limits().with_busy_cap(Duration::ZERO).unwrap());
    r.drive(min(200.0), "cargo build", |t| (ProcState::Running, t));
    assert_eq!(r.killed_at(), Some((KillKind::NoProgress, min(30.0))));
}

/// Idle is unchanged: a busy tool with no line at all is killed idle at the patience.
#[test]
fn a_busy_tool_does_not_hold_the_idle_kill() {
    let mut r = Run::new(limits());
    let mut t = sec(1.0);
    while t <= min(60.0) && r.kill().is_none() {
        r.sample(t, "cargo build", ProcState::Running, t);
        t += sec(1.0);
    }
    assert_eq!(r.killed_at(), Some((KillKind::Idle, min(10.0))));
}

/// The tool's result ends the hold: the no-progress clock restarts from it, and busy
/// processes after the call (a leftover the tool started) hold nothing.
#[test]
fn the_tool_s_result_ends_the_hold() {
    let mut r = Run::new(limits());
    r.drive(min(50.0), "cargo build", |t| (ProcState::Running, t));
    assert!(r.kill().is_none());
    let at = r.at(min(50.0));
    r.reg
        .observe_line(at, r.id, tool_result("toolu_b", false).as_bytes());
    assert_eq!(r.reg.tree_want(r.id).unwrap().tool_since, None);
    // Pings only from here, and the leftover still burning CPU.
    let mut t = min(50.0) + sec(1.0);
    while t <= min(200.0) && r.kill().is_none() {
        if t.as_secs().is_multiple_of(30) {
            let at = r.at(t);
            r.reg.observe_line(at, r.id, PING.as_bytes());
        }
        r.sample(t, "cargo build", ProcState::Running, t);
        t += sec(1.0);
    }
    assert_eq!(r.killed_at(), Some((KillKind::NoProgress, min(80.0))));
    // A `result` ends every call.
    let mut r = Run::new(limits());
    assert!(r.reg.tree_want(r.id).unwrap().tool_since.is_some());
    let at = r.at(min(1.0));
    r.reg.observe_line(at, r.id, RESULT_OK.as_bytes());
    assert_eq!(r.reg.tree_want(r.id).unwrap().tool_since, None);
}

/// The memory guard: the tree over `--max-rss` from one sample on for 5 s → `memory`,
/// naming the largest process; a sample back under it starts over; it kills during a wait.
#[test]
fn the_memory_guard_kills_after_five_seconds_over() {
    let limits = limits().with_max_rss(Some(1 << 30)).unwrap();
    let mut r = Run::new(limits);
    let want = r.reg.tree_want(r.id).unwrap();
    assert!(want.memory && want.urgent());
    let hog = |rss: u64, t: Duration| {
        let mut h = proc(202, "python hog.py", ProcState::Running, t, t);
        h.rss = rss;
        TreeSample {
            root: ROOT,
            procs: vec![proc(ROOT, "claude", ProcState::Asleep, sec(1.0), t), h],
            fault: None,
        }
    };
    // Over at 10 s, back under at 13 s, over again from 20 s on.
    for s in 1..=40u64 {
        let t = sec(s as f64);
        let rss = if (10..13).contains(&s) || s >= 20 {
            2 << 30
        } else {
            100 << 20
        };
        let at = r.at(t);
        r.reg.observe_tree(at, r.id, &hog(rss, t));
    }
    assert_eq!(r.killed_at(), Some((KillKind::Memory, sec(25.0))));
    let tree = r.kill().unwrap().tree.as_deref().unwrap();
    assert_eq!(
        tree.named.as_ref().map(|p| p.cmd.as_str()),
        Some("python hog.py")
    );
    assert_eq!(tree.max_rss, Some(1 << 30));
    assert_eq!(tree.over_rss, Some(sec(5.0)));
    assert_eq!(tree.peak_rss, Some((2 << 30) + (50 << 20)));
    let facts = r.reg.tree_facts(r.id).unwrap();
    assert_eq!(
        facts.samples, 24,
        "the sample at the kill's instant comes after it"
    );
}

/// A tree that cannot be read leaves the stream alone to decide: the busy spell ends, the
/// memory spell too, and the kill says why.
#[test]
fn without_evidence_the_stream_decides() {
    let limits = limits().with_max_rss(Some(1 << 20)).unwrap();
    let mut r = Run::new(limits);
    // One good sample over the guard, then nothing but faults.
    r.sample(sec(1.0), "cargo build", ProcState::Running, sec(1.0));
    let mut t = sec(2.0);
    while t <= min(200.0) && r.kill().is_none() {
        let at = r.at(t);
        r.reg
            .observe_tree(at, r.id, &TreeSample::unavailable("/proc is not mounted"));
        if t.as_secs().is_multiple_of(30) {
            r.heartbeat(t);
        }
        t += sec(1.0);
    }
    assert_eq!(r.killed_at(), Some((KillKind::NoProgress, min(30.0))));
    let tree = r.kill().unwrap().tree.as_deref().unwrap();
    assert_eq!(tree.unavailable.as_deref(), Some("/proc is not mounted"));
    assert_eq!(r.reg.tree_facts(r.id).unwrap().samples, 1);
}

/// A session that does not keep tree state ignores samples and says nothing of a tree.
#[test]
fn samples_need_the_session_s_consent() {
    let t0 = Instant::now();
    let mut reg = Registry::new(limits());
    let id = reg.register(t0, SessionConfig::default());
    reg.observe_line(t0, id, tool_use("t", "Bash").as_bytes());
    assert!(reg.tree_want(id).is_none());
    let s = TreeSample {
        root: ROOT,
        procs: vec![proc(202, "cc", ProcState::Running, min(5.0), min(5.0))],
        fault: None,
    };
    reg.observe_tree(t0 + min(5.0), id, &s);
    reg.handle_timeout(t0 + min(31.0));
    let kill = std::iter::from_fn(|| reg.poll_event())
        .find_map(|e| match e {
            Event::Killed(k) => Some(k),
            _ => None,
        })
        .unwrap();
    assert_eq!((kill.kind, kill.elapsed), (KillKind::Idle, min(10.0)));
    assert!(kill.tree.is_none());
    assert!(reg.tree_facts(id).is_none());
}

/// The stalling warning moves with a busy tool's hold: none while the tool works, one when
/// the cap nears; a hung tool's comes at `warn_at` of `--no-progress`, as before.
#[test]
fn the_stalling_warning_moves_with_the_hold() {
    let warnings = |r: &mut Run| -> Vec<Duration> {
        std::iter::from_fn(|| r.reg.poll_event())
            .filter_map(|e| match e {
                Event::Stalling {
                    clock: watchdog_core::StallClock::NoProgress,
                    remaining,
                    ..
                } => Some(remaining),
                _ => None,
            })
            .collect()
    };
    let mut busy = Run::new(limits());
    let mut seen = Vec::new();
    let mut t = sec(1.0);
    while t <= min(200.0) && busy.kill().is_none() {
        busy.sample(t, "cargo build", ProcState::Running, t);
        if t.as_secs().is_multiple_of(30) {
            busy.heartbeat(t);
        }
        let w = warnings(&mut busy);
        seen.extend(w.iter().map(|rem| (t, *rem)));
        t += sec(1.0);
    }
    // One warning, 6 min (0.2 × 30 min) before the cap at 120 min.
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0], (min(114.0), min(6.0)));
    let mut hung = Run::new(limits());
    hung.drive(min(200.0), "git push", |_| {
        (ProcState::Asleep, Duration::ZERO)
    });
    assert_eq!(hung.killed_at(), Some((KillKind::NoProgress, min(30.0))));
    assert_eq!(
        warnings(&mut hung),
        [min(6.0)],
        "at 24 min, 6 min before the kill"
    );
}

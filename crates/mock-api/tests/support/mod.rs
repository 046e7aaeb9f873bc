//! Driving one real `claude` process for the end-to-end tests: read every stdout
//! line with a deadline, end the process (and its tools) cleanly, and check that
//! nothing of the session is left behind.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mock_api::harness::{claude_version, find_claude, session_processes, ClaudeRun, SessionDirs};
use mock_api::{BlockingMockServer, RecordedRequest, Scenario};
use rustix::process::{kill_process, kill_process_group, Pid, Signal};
use serde_json::Value;

/// The `claude` binary, or a test failure that says how to install it.
pub fn claude() -> std::path::PathBuf {
    match find_claude() {
        Ok(bin) => bin,
        Err(e) => panic!("\n\nThe end-to-end tests need the real Claude Code CLI.\n{e}\n\n"),
    }
}

/// One stdout line with its arrival time.
#[derive(Debug, Clone)]
pub struct Line {
    pub at: Duration,
    pub json: Value,
}

impl Line {
    pub fn kind(&self) -> String {
        let t = self.json["type"].as_str().unwrap_or("?");
        match (
            t,
            self.json["subtype"].as_str(),
            self.json.pointer("/event/type").and_then(Value::as_str),
        ) {
            (_, Some(sub), _) => format!("{t}/{sub}"),
            ("stream_event", None, Some(ev)) => format!("stream_event/{ev}"),
            _ => t.to_string(),
        }
    }
}

enum Msg {
    Line(Instant, String),
    Eof,
}

/// A running `claude -p` against a mock, with a transcript of everything it printed.
pub struct Session {
    pub name: String,
    pub server: BlockingMockServer,
    pub dirs: Arc<SessionDirs>,
    child: Option<Child>,
    rx: Receiver<Msg>,
    stderr: Arc<Mutex<String>>,
    pub start: Instant,
    pub lines: Vec<Line>,
    eof: bool,
    deadline: Instant,
    pub status: Option<ExitStatus>,
}

impl Session {
    /// Starts a mock for `scenario` and the CLI against it (`configure` adjusts the run).
    /// Every wait of the session is bounded by `budget` from now.
    pub fn start(
        scenario: Scenario,
        budget: Duration,
        configure: impl FnOnce(ClaudeRun) -> ClaudeRun,
    ) -> Session {
        let server = BlockingMockServer::start(scenario).expect("start the mock server");
        let run =
            ClaudeRun::new(claude(), server.base_url(), "Say hello.").expect("create session dirs");
        Session::spawn(server, configure(run), budget)
    }

    /// Spawns a prepared run against `server`.
    pub fn spawn(server: BlockingMockServer, run: ClaudeRun, budget: Duration) -> Session {
        use std::os::unix::process::CommandExt;
        let name = std::thread::current().name().unwrap_or("e2e").to_string();
        let mut cmd = run.command().to_std();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let start = Instant::now();
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", run.command().program.display()));
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            let mut buf = String::new();
            loop {
                buf.clear();
                match r.read_line(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx
                            .send(Msg::Line(
                                Instant::now(),
                                buf.trim_end_matches('\n').to_string(),
                            ))
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            }
            let _ = tx.send(Msg::Eof);
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err_pipe = child.stderr.take().unwrap();
        let err_buf = stderr.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err_pipe.read_to_string(&mut s);
            err_buf.lock().unwrap().push_str(&s);
        });
        Session {
            name,
            server,
            dirs: run.dirs().clone(),
            child: Some(child),
            rx,
            stderr,
            start,
            lines: Vec::new(),
            eof: false,
            deadline: start + budget,
            status: None,
        }
    }

    /// Fails (see [`Session::fail`]) unless `got == want`, naming `what` and both values.
    #[track_caller]
    pub fn expect_eq<A, B>(&self, what: &str, got: A, want: B)
    where
        A: PartialEq<B> + std::fmt::Debug,
        B: std::fmt::Debug,
    {
        if got != want {
            self.fail(&format!("{what}: expected {want:?}, got {got:?}"));
        }
    }

    /// Fails (see [`Session::fail`]) with `msg` unless `ok`.
    #[track_caller]
    pub fn expect(&self, ok: bool, msg: &str) {
        if !ok {
            self.fail(msg);
        }
    }

    /// Panics with `msg` plus the transcript, stderr and the mock's view.
    #[track_caller]
    pub fn fail(&self, msg: &str) -> ! {
        let mut t = String::new();
        for l in &self.lines {
            let mut s = l.json.to_string();
            if s.len() > 300 {
                let mut cut = 300;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                s.truncate(cut);
                s.push('…');
            }
            t.push_str(&format!(
                "  {:>7.3}s {:<28} {s}\n",
                l.at.as_secs_f64(),
                l.kind()
            ));
        }
        let reqs: Vec<String> = self
            .server
            .requests()
            .iter()
            .map(|r| {
                let s = r.summary.as_ref();
                format!(
                    "  +{}ms {} {}{} roles={:?} stream={:?}",
                    r.at_ms,
                    r.method,
                    r.path,
                    r.query
                        .as_deref()
                        .map(|q| format!("?{q}"))
                        .unwrap_or_default(),
                    s.map(|s| &s.roles),
                    s.map(|s| s.stream)
                )
            })
            .collect();
        let version = claude_version(&claude()).unwrap_or_else(|e| e);
        panic!(
            "\n[{}] PROTOCOL CHECK FAILED (claude {version}): {msg}\n--- stdout ({} lines, eof={}, exit={:?}):\n{t}--- stderr:\n{}\n--- mock requests:\n{}\n",
            self.name,
            self.lines.len(),
            self.eof,
            self.status,
            self.stderr.lock().unwrap(),
            reqs.join("\n")
        );
    }

    fn push(&mut self, at: Instant, raw: String) -> Line {
        let json: Value = match serde_json::from_str(&raw) {
            Ok(v) => v,
            Err(e) => self.fail(&format!("stdout line is not JSON ({e}): {raw:?}")),
        };
        let line = Line {
            at: at - self.start,
            json,
        };
        self.lines.push(line.clone());
        line
    }

    /// The next line within `timeout` (capped by the session budget); `None` on
    /// timeout or end of output.
    pub fn next_line(&mut self, timeout: Duration) -> Option<Line> {
        if self.eof {
            return None;
        }
        let until = (Instant::now() + timeout).min(self.deadline);
        match self
            .rx
            .recv_timeout(until.saturating_duration_since(Instant::now()))
        {
            Ok(Msg::Line(at, raw)) => Some(self.push(at, raw)),
            Ok(Msg::Eof) | Err(RecvTimeoutError::Disconnected) => {
                self.eof = true;
                None
            }
            Err(RecvTimeoutError::Timeout) => None,
        }
    }

    /// Reads lines until one satisfies `pred`; fails with `what` if none does in time.
    #[track_caller]
    pub fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Line {
        if let Some(l) = self.lines.iter().find(|l| pred(&l.json)) {
            return l.clone();
        }
        let until = Instant::now() + timeout;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || Instant::now() >= self.deadline {
                self.fail(&format!("no {what} within {timeout:?}"));
            }
            match self.next_line(left) {
                Some(l) if pred(&l.json) => return l,
                Some(_) => {}
                None if self.eof => self.fail(&format!("output ended without {what}")),
                None => {}
            }
        }
    }

    /// Asserts that the CLI prints nothing at all for `d`.
    #[track_caller]
    pub fn expect_silence(&mut self, d: Duration, context: &str) {
        let from = Instant::now();
        if let Some(l) = self.next_line(d) {
            let after = from.elapsed();
            self.fail(&format!(
                "expected no stdout for {d:?} {context}, got {} after {after:?}",
                l.kind()
            ));
        }
        if self.eof {
            self.fail(&format!(
                "expected the CLI to stay alive and silent {context}, but its output ended"
            ));
        }
    }

    /// Reads to the end of output and waits for the exit (both within `timeout`),
    /// then checks that no process of the session is left.
    #[track_caller]
    pub fn finish(&mut self, timeout: Duration) -> ExitStatus {
        let until = Instant::now() + timeout;
        while !self.eof {
            if Instant::now() >= until.min(self.deadline) {
                self.fail(&format!(
                    "the CLI did not end its output within {timeout:?}"
                ));
            }
            self.next_line(until.saturating_duration_since(Instant::now()));
        }
        let status = self.wait_exit(until.saturating_duration_since(Instant::now()));
        let Some(status) = status else {
            self.fail(&format!(
                "the CLI closed stdout but did not exit within {timeout:?}"
            ));
        };
        self.assert_no_leftovers();
        status
    }

    fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + timeout;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                self.status = Some(st);
                return Some(st);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal_group(&self, sig: Signal) {
        if let Some(child) = &self.child {
            if let Some(pid) = Pid::from_raw(child.id() as i32) {
                let _ = kill_process_group(pid, sig);
            }
        }
    }

    /// Sends SIGTERM to the CLI's process group and waits up to `grace` for the
    /// exit; SIGKILLs it if needed (right away for a zero `grace`). Returns the exit status and how long it took.
    pub fn terminate(&mut self, grace: Duration) -> (ExitStatus, Duration) {
        let t0 = Instant::now();
        if !grace.is_zero() {
            self.signal_group(Signal::TERM);
            if let Some(st) = self.wait_exit(grace) {
                return (st, t0.elapsed());
            }
        }
        self.signal_group(Signal::KILL);
        let st = self
            .wait_exit(Duration::from_secs(10))
            .expect("SIGKILLed CLI exits");
        (st, t0.elapsed())
    }

    /// Drains whatever stdout is left after the exit (bounded).
    pub fn drain(&mut self) {
        let until = Instant::now() + Duration::from_secs(5);
        while !self.eof && Instant::now() < until {
            self.next_line(Duration::from_millis(200));
        }
    }

    /// Fails if any process still references the session's temp dir (waits up to
    /// 5 s for stragglers, then kills them so nothing leaks past the test).
    #[track_caller]
    pub fn assert_no_leftovers(&mut self) {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let left = session_processes(self.dirs.root());
            if left.is_empty() {
                return;
            }
            if Instant::now() >= until {
                kill_all(&left);
                self.fail(&format!(
                    "processes of the session are still running after the CLI exited: {left:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The mock's main requests.
    pub fn main_requests(&self) -> Vec<RecordedRequest> {
        self.server.main_requests()
    }

    /// Lines of this kind (`"result"`, `"system/init"`, `"stream_event/ping"`, ...).
    pub fn of_kind(&self, kind: &str) -> Vec<Line> {
        self.lines
            .iter()
            .filter(|l| l.kind() == kind)
            .cloned()
            .collect()
    }

    /// The `system/init` session id (fails if missing).
    #[track_caller]
    pub fn session_id(&self) -> String {
        let init = self.lines.iter().find(|l| l.kind() == "system/init");
        match init.and_then(|l| l.json["session_id"].as_str()) {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => self.fail("no system/init line with a session_id"),
        }
    }
}

fn kill_all(procs: &[(u32, String)]) {
    for (pid, _) in procs {
        if let Some(pid) = Pid::from_raw(*pid as i32) {
            let _ = kill_process(pid, Signal::KILL);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // On any exit path (including a failed assertion) leave nothing running.
        let running = self
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
        if running {
            self.signal_group(Signal::KILL);
        }
        if let Some(child) = self.child.as_mut() {
            let _ = child.wait();
        }
        let left = session_processes(self.dirs.root());
        kill_all(&left);
    }
}

/// Exit code of a status (`None` if killed by a signal).
pub fn code(st: &ExitStatus) -> Option<i32> {
    st.code()
}

//! One real Codex or opencode run under `agent-watchdog run`, and what the dialect tests read
//! of it: the summary, the exit, stdout, the capture (its lines' own bytes), the replay's and
//! the audit's verdicts; nothing of the session may be left running.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mock_api::harness::{session_processes, ClaudeCommand};
use serde_json::Value;

/// The `agent-watchdog` binary.
pub const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

/// One real CLI at a time: they are heavy on a 2-core machine.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// Every run is bounded, whatever the test's own flags: a hung test fails, it does not hang.
const BOUND: &[&str] = &["--ceiling", "5m"];

/// A finished supervised run.
pub struct Live {
    pub stdout: Vec<u8>,
    pub summary: Value,
    pub stderr: String,
    pub code: Option<i32>,
    pub capture: PathBuf,
    pub took: Duration,
    _dir: tempfile::TempDir,
}

impl Live {
    /// The stdout lines, parsed.
    pub fn lines(&self) -> Vec<Value> {
        self.stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap_or(Value::Null))
            .collect()
    }

    /// The line `agent-watchdog: killed …` on stderr.
    pub fn kill_line(&self) -> &str {
        self.stderr
            .lines()
            .find(|l| l.contains("agent-watchdog: killed"))
            .unwrap_or_else(|| panic!("no kill line: {}", self.stderr))
    }

    /// The capture's stdout lines, as the bytes the CLI printed (a `line` record embeds them:
    /// `{"line":BYTES,"t_ms":N}`), each with its newline, and their times.
    pub fn captured(&self) -> (Vec<u8>, Vec<u64>) {
        let text = std::fs::read(&self.capture).unwrap();
        let (mut bytes, mut times) = (Vec::new(), Vec::new());
        for entry in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let Some(rest) = entry.strip_prefix(b"{\"line\":") else {
                continue;
            };
            let cut = rest
                .windows(8)
                .rposition(|w| w == b",\"t_ms\":")
                .expect("a line record ends with its t_ms");
            bytes.extend_from_slice(&rest[..cut]);
            bytes.push(b'\n');
            let t = std::str::from_utf8(&rest[cut + 8..rest.len() - 1]).unwrap();
            times.push(t.parse().unwrap());
        }
        (bytes, times)
    }

    /// With `DIALECT_RECORDINGS=DIR` set, keep the capture as `DIR/<name>.capture.jsonl`, the
    /// machine's paths rewritten (the repository to `<repo>`, the session's temporary root to
    /// `/tmp/session`, the home to `/home/user`): how `testdata/dialects/` was recorded.
    pub fn keep_as(&self, name: &str, session_root: &Path) {
        let Some(dir) = std::env::var_os("DIALECT_RECORDINGS") else {
            return;
        };
        let mut text = std::fs::read_to_string(&self.capture).unwrap();
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let repo = repo.canonicalize().unwrap();
        let main_tools = std::fs::canonicalize(repo.join(".tools")).unwrap();
        let rewrites = [
            (main_tools.display().to_string(), "<repo>/.tools".to_owned()),
            (repo.display().to_string(), "<repo>".to_owned()),
            (
                session_root.display().to_string(),
                "/tmp/session".to_owned(),
            ),
            (
                std::env::var("HOME").unwrap_or_else(|_| "/nowhere".into()),
                "/home/user".to_owned(),
            ),
        ];
        for (from, to) in rewrites {
            text = text.replace(&from, &to);
        }
        let path = PathBuf::from(dir).join(format!("{name}.capture.jsonl"));
        std::fs::write(&path, text).unwrap();
    }

    /// Stdout is byte for byte what the CLI printed, every line of it counted in the summary.
    pub fn assert_passed_through(&self) {
        let (printed, _) = self.captured();
        assert!(!printed.is_empty(), "the CLI printed nothing");
        assert_eq!(
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(&printed),
            "stdout vs what the CLI printed"
        );
        assert_eq!(self.stdout, printed);
        let counted: u64 = self.summary["lines"]
            .as_object()
            .unwrap()
            .values()
            .filter_map(Value::as_u64)
            .sum();
        assert_eq!(counted, self.lines().len() as u64, "{}", self.summary);
    }
}

/// Run `cmd` under `agent-watchdog run FLAGS --summary … --record … --` with `stdin`, to its
/// end; check that nothing of the session (found by its directories, `root`) is left.
pub fn run(cmd: &ClaudeCommand, flags: &[&str], stdin: Stdio, root: &Path) -> Live {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    let capture = dir.path().join("capture.jsonl");
    let started = Instant::now();
    let out = cmd
        .behind(
            Command::new(BIN)
                .arg("run")
                .args(BOUND)
                .args(flags)
                .arg("--summary")
                .arg(&summary)
                .arg("--record")
                .arg(&capture)
                .arg("--"),
        )
        .stdin(stdin)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no summary ({e}); stderr: {stderr}"));
    let left = session_processes(root);
    assert!(left.is_empty(), "left running: {left:?}\nstderr: {stderr}");
    Live {
        stdout: out.stdout,
        summary,
        stderr,
        code: out.status.code(),
        capture,
        took,
        _dir: dir,
    }
}

/// `agent-watchdog <args> --json`, parsed.
fn json_of(args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .args(args)
        .arg("--json")
        .env_clear()
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// `replay CAPTURE FLAGS --json`.
pub fn replay(live: &Live, flags: &[&str]) -> Value {
    let p = live.capture.to_str().unwrap();
    json_of(&[&["replay", p], BOUND, flags].concat())
}

/// `audit CAPTURE FLAGS --quiet --json`.
pub fn audit(live: &Live, flags: &[&str]) -> Value {
    let p = live.capture.to_str().unwrap();
    json_of(&[&["audit", p, "--quiet"], BOUND, flags].concat())
}

/// The replay and the audit of the run's capture give the live verdict: the outcome, the
/// kill's kind and instant (the recorder's ms), the session id; the replay the dialect.
pub fn assert_replay_and_audit_agree(live: &Live, flags: &[&str]) {
    let s = &live.summary;
    let r = replay(live, flags);
    assert_eq!(r["outcome"], s["outcome"], "replay {r}\nlive {s}");
    assert_eq!(r["dialect"], s["dialect"], "replay {r}");
    assert_eq!(r["session_id"], s["session_id"], "replay {r}");
    assert_eq!(r["kill"]["kind"], s["kill"]["kind"], "replay {r}");
    let at = |k: &Value| k["at_ms"].as_i64();
    if let (Some(l), Some(p)) = (at(&s["kill"]), at(&r["kill"])) {
        assert!(
            (l - p).abs() < 1000,
            "live kill at {l} ms, replay at {p} ms"
        );
    }
    let a = audit(live, flags);
    let session = &a["sessions"][0];
    assert_eq!(session["session_id"], s["session_id"], "audit {a}");
    let kills = a["would_kill"].as_array().unwrap();
    match s["kill"]["kind"].as_str() {
        Some(kind) => {
            assert_eq!(kills.len(), 1, "audit {a}");
            assert_eq!(kills[0]["kind"], kind, "audit {a}");
            let l = at(&s["kill"]).unwrap();
            let p = kills[0]["at_ms"].as_i64().unwrap();
            assert!((l - p).abs() < 1000, "live kill at {l} ms, audit at {p} ms");
        }
        None => {
            assert!(kills.is_empty(), "audit would kill: {a}");
            let ending = match s["outcome"].as_str().unwrap() {
                "success" => "result",
                "error_result" => "error",
                other => other,
            };
            assert_eq!(session["ending"], ending, "audit {a}");
        }
    }
}

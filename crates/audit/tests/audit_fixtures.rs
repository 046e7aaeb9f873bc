//! `audit` on a fixture folder built here: every reported figure, exactly.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use watchdog_audit::Ending;
use watchdog_audit::SpellKind;
use watchdog_audit::{audit_paths, AuditReport};
use watchdog_core::Limits;

const T0: i64 = 1_796_030_000_000; // 2026-11-30T09:13:20Z

fn ts(ms: i64) -> String {
    // Fixture times stay within one day: format relative to T0 by hand.
    let total = T0 + ms;
    let day_ms = total.rem_euclid(86_400_000);
    format!(
        "2026-11-30T{:02}:{:02}:{:02}.{:03}Z",
        day_ms / 3_600_000,
        day_ms / 60_000 % 60,
        day_ms / 1000 % 60,
        day_ms % 1000
    )
}

struct Fx {
    sid: &'static str,
    side: bool,
    lines: Vec<String>,
}

impl Fx {
    fn new(sid: &'static str) -> Self {
        Fx {
            sid,
            side: false,
            lines: Vec::new(),
        }
    }
    fn push(&mut self, mut v: Value, t: Option<i64>) -> &mut Self {
        v["sessionId"] = json!(self.sid);
        v["isSidechain"] = json!(self.side);
        if let Some(t) = t {
            v["timestamp"] = json!(ts(t));
        }
        self.lines.push(v.to_string());
        self
    }
    fn enqueue(&mut self, t: i64) -> &mut Self {
        self.push(
            json!({"type":"queue-operation","operation":"enqueue","content":"go"}),
            Some(t),
        )
    }
    fn prompt(&mut self, t: i64) -> &mut Self {
        self.push(
            json!({"type":"user","message":{"role":"user","content":"do it"}}),
            Some(t),
        )
    }
    fn tool_use(&mut self, t: i64, id: &str, name: &str) -> &mut Self {
        self.push(
            json!({"type":"assistant","message":{"role":"assistant","content":[
                {"type":"text","text":"calling"},
                {"type":"tool_use","id":id,"name":name,"input":{"command":"x"}}],
                "stop_reason":"tool_use"}}),
            Some(t),
        )
    }
    fn tool_result(&mut self, t: i64, id: &str, human: bool) -> &mut Self {
        let source = if human { "user" } else { "config" };
        self.push(
            json!({"type":"user","message":{"role":"user","content":[
                {"tool_use_id":id,"type":"tool_result","content":"ok\n\"quoted\"","is_error":false}]},
                "toolUseResult":{"stdout":"ok"},
                "permissionDecision":{"decision":"accept","source":source}}),
            Some(t),
        )
    }
    fn answer(&mut self, t: i64, stop: &str) -> &mut Self {
        self.push(
            json!({"type":"assistant","message":{"role":"assistant","content":[
                {"type":"text","text":"done"}],"stop_reason":stop}}),
            Some(t),
        )
    }
    fn bookkeeping(&mut self) -> &mut Self {
        self.push(json!({"type":"last-prompt","lastPrompt":"x"}), None)
    }
    fn write(&self, path: &Path, tail: &str) {
        if let Some(p) = path.parent() {
            fs::create_dir_all(p).unwrap();
        }
        let mut s = self.lines.join("\n");
        s.push('\n');
        s.push_str(tail);
        fs::write(path, s).unwrap();
    }
}

/// The fixture folder (see each file's comment for its spells).
fn fixture(dir: &Path) -> PathBuf {
    let root = dir.join("projects");
    let p = root.join("-home-user-proj");
    // A: a long Bash call (5 min), then a final answer.
    Fx::new("sess-a")
        .enqueue(0)
        .prompt(100)
        .tool_use(2_100, "t1", "Bash")
        .tool_result(302_100, "t1", false)
        .answer(305_100, "end_turn")
        .bookkeeping()
        .write(&p.join("sess-a.jsonl"), "");
    // B: no result (dies during a Read); an entry without timestamp, a non-JSON line and a
    // truncated last line.
    Fx::new("sess-b")
        .prompt(0)
        .tool_use(1_000, "r1", "Read")
        .push(json!({"type":"assistant","message":{"content":[]}}), None)
        .write(
            &p.join("sess-b.jsonl"),
            "this is not JSON\n{\"type\":\"user\",\"timestamp\":\"2026-11-30T09:",
        );
    // C: the final answer stopped on max_tokens.
    Fx::new("sess-c")
        .prompt(0)
        .answer(4_000, "max_tokens")
        .write(&p.join("sess-c.jsonl"), "");
    // D: a Write whose permission a person answered after 10 minutes.
    Fx::new("sess-d")
        .prompt(0)
        .tool_use(1_000, "w1", "Write")
        .tool_result(601_000, "w1", true)
        .answer(602_000, "end_turn")
        .write(&p.join("sess-d.jsonl"), "");
    // E: the clock jumps backwards once.
    Fx::new("sess-e")
        .prompt(10_000)
        .tool_use(5_000, "g1", "Grep")
        .tool_result(20_000, "g1", false)
        .answer(21_000, "end_turn")
        .write(&p.join("sess-e.jsonl"), "");
    // F: a 30-minute Task whose subagent works meanwhile (its file is under sess-f/subagents).
    Fx::new("sess-f")
        .prompt(0)
        .tool_use(1_000, "k1", "Task")
        .tool_result(1_801_000, "k1", false)
        .answer(1_802_000, "end_turn")
        .write(&p.join("sess-f.jsonl"), "");
    let mut sub = Fx::new("sess-f");
    sub.side = true;
    sub.prompt(1_500)
        .tool_use(2_000, "s1", "Bash")
        .tool_result(900_000, "s1", false)
        .answer(1_800_000, "end_turn")
        .write(&p.join("sess-f/subagents/agent-x.jsonl"), "");
    // An orphan subagent (its parent is not in the folder).
    let mut orphan = Fx::new("sess-orphan");
    orphan.side = true;
    orphan
        .prompt(0)
        .answer(500, "end_turn")
        .write(&p.join("sess-orphan/subagents/agent-o.jsonl"), "");
    // Unreadable: a dangling symbolic link named like a transcript.
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.join("nowhere"), p.join("gone.jsonl")).unwrap();
    // Not a transcript: ignored by the folder walk.
    fs::write(p.join("notes.txt"), "hello").unwrap();
    root
}

fn dist(r: &AuditReport, k: SpellKind) -> (u64, u64, u64, u64, u64) {
    let d = r.quiet_spells.iter().find(|(x, _)| *x == k).unwrap().1;
    (d.count, d.p50_ms, d.p90_ms, d.p99_ms, d.max_ms)
}

fn tree_bytes(dir: &Path) -> u64 {
    let mut n = 0;
    for e in fs::read_dir(dir).unwrap().flatten() {
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            n += tree_bytes(&e.path());
        } else if ft.is_file() && e.path().extension().is_some_and(|x| x == "jsonl") {
            n += e.metadata().unwrap().len();
        }
    }
    n
}

#[test]
fn every_figure_of_the_fixture_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fixture(tmp.path());
    let r = audit_paths(std::slice::from_ref(&root), &Limits::default());

    assert_eq!(r.sessions_scanned, 8);
    assert_eq!(r.subagent_sessions, 2);
    assert_eq!(r.files_skipped, 1);
    assert!(r.skipped[0].0.ends_with("gone.jsonl"), "{:?}", r.skipped);
    assert_eq!(r.read.bytes, tree_bytes(&root));
    // 6+4+2+4+4+4+4+2 JSON lines, plus B's non-JSON and truncated lines.
    assert_eq!(r.read.lines, 6 + 5 + 2 + 4 + 4 + 4 + 4 + 2);
    assert_eq!(r.read.bad_lines, 2);
    assert_eq!(r.read.truncated_lines, 1);
    assert_eq!(r.read.untimed_entries, 1);
    assert_eq!(r.read.clock_jumps, 1);

    // Model spells: A 100, 2000, 3000; B 1000; C 4000; D 1000, 1000; E 0, 1000; F 1000, 1000;
    // orphan 500.
    assert_eq!(dist(&r, SpellKind::Model), (12, 1_000, 3_000, 4_000, 4_000));
    // Tool spells: A Bash 300000; E Grep 10000; F Task 500, 500, 898000, 900000, 1000 (split
    // by the subagent's activity, which is merged into F's timeline).
    assert_eq!(
        dist(&r, SpellKind::Tool),
        (7, 10_000, 900_000, 900_000, 900_000)
    );
    assert_eq!(
        dist(&r, SpellKind::Human),
        (1, 600_000, 600_000, 600_000, 600_000)
    );
    assert_eq!(dist(&r, SpellKind::AfterResult), (0, 0, 0, 0, 0));
    let tools: Vec<(&str, u64, u64)> = r
        .tools
        .iter()
        .map(|(t, d)| (t.as_str(), d.count, d.max_ms))
        .collect();
    assert_eq!(
        tools,
        [
            ("Task", 5, 900_000),
            ("Bash", 1, 300_000),
            ("Grep", 1, 10_000)
        ]
    );

    let top: Vec<(&str, u64, &str, Option<&str>, u64)> = r
        .longest_productive_silences
        .iter()
        .map(|s| {
            (
                s.session_id.as_str(),
                s.ms,
                s.kind.as_str(),
                s.tool.as_deref(),
                s.start_ms,
            )
        })
        .collect();
    assert_eq!(
        top,
        [
            ("sess-f", 900_000, "tool", Some("Task"), 900_000),
            ("sess-a", 300_000, "tool", Some("Bash"), 2_100),
            ("sess-e", 10_000, "tool", Some("Grep"), 0),
            ("sess-c", 4_000, "model", None, 0),
            ("sess-b", 1_000, "model", None, 0),
            ("sess-d", 1_000, "model", None, 0),
            ("sess-orphan", 500, "model", None, 0),
        ]
    );
    assert!(r.longest_productive_silences[0]
        .file
        .ends_with("sess-f.jsonl"));

    let outcomes: Vec<(Ending, u64)> = r.outcomes.iter().copied().filter(|o| o.1 > 0).collect();
    assert_eq!(
        outcomes,
        [
            (Ending::Result, 6),
            (Ending::MaxTokens, 1),
            (Ending::NoResult, 1)
        ]
    );

    // The defaults kill nobody: the Bash call is within the pre-write patience (20 min), the
    // human wait pauses the clocks, the subagent keeps F alive.
    assert_eq!(r.would_kill, []);

    // 900 s × 1.25 = 18m45s → 20m for both clocks; the replay check confirms it.
    let rec = &r.recommended;
    assert_eq!((rec.idle_ms, rec.no_progress_ms), (1_200_000, 1_200_000));
    assert_eq!(
        (rec.longest_quiet_ms, rec.longest_spell_ms),
        (900_000, 900_000)
    );
    assert!(rec.verified && !rec.no_data);
    assert_eq!(rec.raised, 0);
}

#[test]
fn a_session_the_flags_would_kill_is_listed_at_the_right_time() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fixture(tmp.path());
    let limits = Limits::default()
        .with_idle(Duration::from_secs(60))
        .unwrap();
    let r = audit_paths(&[root], &limits);
    let kills: Vec<(&str, &str, u64, bool)> = r
        .would_kill
        .iter()
        .map(|k| (k.session_id.as_str(), k.kind, k.at_ms, k.productive))
        .collect();
    // Before the first write, patience is idle × 2 = 2 min from the last line:
    // A's Bash call started at 2.1 s, F's subagent went quiet at 2 s.
    assert_eq!(
        kills,
        [
            ("sess-a", "idle", 122_100, true),
            ("sess-f", "idle", 122_000, true)
        ]
    );
    // The recommendation does not depend on the flags.
    assert_eq!(r.recommended.idle_ms, 1_200_000);
}

#[test]
fn the_json_report_has_the_documented_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fixture(tmp.path());
    let v = audit_paths(&[root], &Limits::default()).to_json();
    for k in [
        "sessions_scanned",
        "files_skipped",
        "bytes",
        "lines",
        "bad_lines",
        "truncated_lines",
        "untimed_entries",
        "clock_jumps",
        "subagent_sessions",
    ] {
        assert!(v[k].is_u64(), "{k}: {}", v[k]);
    }
    for kind in ["model", "tool", "after_result", "human"] {
        let d = &v["quiet_spells"][kind];
        for k in ["count", "p50_ms", "p90_ms", "p99_ms", "max_ms"] {
            assert!(d[k].is_u64(), "{kind}.{k}");
        }
    }
    let s = &v["longest_productive_silences"];
    assert_eq!(s.as_array().unwrap().len(), 7);
    for x in s.as_array().unwrap() {
        assert!(x["session_id"].is_string() && x["file"].is_string());
        assert!(x["ms"].is_u64() && x["kind"].is_string());
        assert!(x["tool"].is_string() || x["tool"].is_null());
    }
    assert!(v["would_kill"].is_array());
    assert!(v["recommended"]["idle_ms"].is_u64());
    assert!(v["recommended"]["no_progress_ms"].is_u64());
    assert!(v["recommended"]["verified"].is_boolean());
    for k in [
        "result",
        "error",
        "max_tokens",
        "no_result",
        "interrupted",
        "incomplete",
    ] {
        assert!(v["outcomes"][k].is_u64(), "outcomes.{k}");
    }
    assert_eq!(v["outcomes"]["result"], 6);
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 8);
    let a = sessions
        .iter()
        .find(|s| s["session_id"] == "sess-a")
        .unwrap();
    assert_eq!(a["ending"], "result");
    assert_eq!(a["spells"], 4);
    assert_eq!(a["longest_productive_ms"], 300_000);
    assert_eq!(a["longest_productive_tool"], "Bash");
    assert!(a["would_kill"].is_null() && a["subagent"] == false);
    let sub = sessions
        .iter()
        .find(|s| s["file"].as_str().unwrap().ends_with("agent-x.jsonl"))
        .unwrap();
    assert_eq!(
        (sub["subagent"].as_bool(), sub["spells"].as_u64()),
        (Some(true), Some(0))
    );
    assert_eq!(v["skipped"].as_array().unwrap().len(), 1);
}

#[test]
fn heartbeats_interrupts_and_questions() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("p");
    // G: a 40-minute Bash call that only sends heartbeats (`progress` entries) every 30 s.
    let mut g = Fx::new("sess-g");
    g.prompt(0).tool_use(1_000, "b1", "Bash");
    for k in 1..=80 {
        g.push(
            json!({"type":"progress","data":{"type":"bash_progress","output":"."},"toolUseID":"b1"}),
            Some(1_000 + k * 30_000),
        );
    }
    g.tool_result(2_401_000, "b1", false)
        .answer(2_402_000, "end_turn")
        .write(&p.join("sess-g.jsonl"), "");
    // H: the user interrupts a long Read; nothing follows.
    Fx::new("sess-h")
        .prompt(0)
        .tool_use(1_000, "r1", "Read")
        .tool_result(500_000, "r1", false)
        .push(
            json!({"type":"user","message":{"role":"user","content":[
                {"type":"text","text":"[Request interrupted by user for tool use]"}]}}),
            Some(500_001),
        )
        .write(&p.join("sess-h.jsonl"), "");
    // I: the model asks the user a question (AskUserQuestion) who answers after 20 minutes; an
    // API error message ends the session; the session is a sidechain outside any subagents
    // folder.
    let mut i = Fx::new("sess-i");
    i.side = true;
    i.prompt(0)
        .tool_use(1_000, "q1", "AskUserQuestion")
        .tool_result(1_201_000, "q1", false)
        .push(
            json!({"type":"assistant","isApiErrorMessage":true,"error":"rate_limit",
                   "message":{"content":[{"type":"text","text":"API Error"}],"stop_reason":"stop_sequence"}}),
            Some(1_202_000),
        )
        .write(&p.join("sess-i.jsonl"), "");

    let r = audit_paths(std::slice::from_ref(&p), &Limits::default());
    assert_eq!(r.sessions_scanned, 3);
    assert_eq!(r.subagent_sessions, 1);
    let outcomes: Vec<(Ending, u64)> = r.outcomes.iter().copied().filter(|o| o.1 > 0).collect();
    assert_eq!(
        outcomes,
        [
            (Ending::Result, 1),
            (Ending::Error, 1),
            (Ending::Interrupted, 1)
        ]
    );
    // G's Bash call: 81 spells of 30 s without a line at all, but 40 minutes without progress
    // (heartbeats are keep-alives).
    let g_top = &r.longest_productive_silences[0];
    assert_eq!(g_top.session_id, "sess-g");
    assert_eq!((g_top.ms, g_top.quiet_ms), (2_400_000, 30_000));
    // H's interrupted Read is not a productive silence; I's question is a human wait, and so is
    // the millisecond before H's user typed the interrupt.
    assert!(r
        .longest_productive_silences
        .iter()
        .all(|s| s.ms < 499_000 || s.session_id == "sess-g"));
    assert_eq!(
        dist(&r, SpellKind::Human),
        (2, 1, 1_200_000, 1_200_000, 1_200_000)
    );
    // The defaults: G's heartbeats keep the idle clock happy, the no-progress cap (30 min) ends
    // it 30 min after its last progress line (the tool call at 1 s): productive work killed.
    let kills: Vec<(&str, &str, u64, bool)> = r
        .would_kill
        .iter()
        .map(|k| (k.session_id.as_str(), k.kind, k.at_ms, k.productive))
        .collect();
    assert_eq!(kills, [("sess-g", "no_progress", 1_801_000, true)]);
    // The recommendation covers it: idle from the 30 s gaps (→ 1m), no-progress from the 40 min
    // spell (× 1.25 = 50 min → 60m).
    let rec = &r.recommended;
    assert_eq!((rec.idle_ms, rec.no_progress_ms), (60_000, 3_600_000));
    assert!(rec.verified);
}

/// Each session's wall-clock origin, end and (only when asked for) its spell list: what a
/// telemetry back-fill exports.
#[test]
fn spell_lists_are_kept_only_when_asked_for_and_count_from_the_origin() {
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    let dir = tempfile::tempdir().unwrap();
    // A capture with a `start` record (a wall clock at spawn), and one transcript.
    let capture =
        fs::read_to_string(testdata.join("captures/s4_stall_long_silent.capture.jsonl")).unwrap();
    let with_start = dir.path().join("c.capture.jsonl");
    fs::write(
        &with_start,
        format!("{{\"t_ms\":0,\"start\":{{\"wall_ms\":{T0},\"argv\":[\"claude\"],\"version\":1}}}}\n{capture}"),
    )
    .unwrap();
    let transcript = testdata.join("transcripts/tool-session.jsonl");
    let paths = [with_start.clone(), transcript.clone()];
    let limits = Limits::default();
    let run = |keep: bool| {
        watchdog_audit::audit_files_with(
            watchdog_audit::scan::discover(&paths),
            &limits,
            2,
            &|_| {},
            &watchdog_audit::as_given,
            keep,
        )
    };
    let plain = audit_paths(&paths, &limits);
    assert!(plain.sessions.iter().all(|s| s.spell_list.is_empty()));
    let kept = run(true);
    assert_eq!(kept.to_json(), plain.to_json(), "the report is the same");
    for s in &kept.sessions {
        assert_eq!(s.spell_list.len() as u64, s.spells, "{}", s.file.display());
        assert!(s.spells > 0);
        assert!(s.end_ms > 0);
        // A spell starts at an entry: by the last one.
        assert!(
            s.spell_list.iter().all(|sp| sp.start_ms <= s.end_ms),
            "{}",
            s.file.display()
        );
    }
    let c = kept.sessions.iter().find(|s| s.file == with_start).unwrap();
    assert_eq!(c.origin_wall_ms, Some(T0));
    // The capture's first line is at `t_ms` 520: its spells count from the spawn, as its
    // kills do.
    assert!(c.spell_list[0].start_ms >= 520, "{:?}", c.spell_list[0]);
    assert!(c.spell_list[0].start_ms < 2 * 520, "{:?}", c.spell_list[0]);
    let t = kept.sessions.iter().find(|s| s.file == transcript).unwrap();
    let first = watchdog_core::parse_iso_ms("2026-11-30T09:17:55.082Z");
    assert_eq!(t.origin_wall_ms, first);
    assert!(run(false).sessions.iter().all(|s| s.spell_list.is_empty()));
}

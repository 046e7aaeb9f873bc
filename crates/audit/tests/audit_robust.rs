//! `audit` never panics: mutilated real transcripts, garbage, huge lines, odd files.

use std::fs;

use watchdog_audit::{audit_paths, render_svg, render_text};
use watchdog_core::Limits;

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

#[test]
fn mutilated_transcripts_and_captures_never_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let mut sources = Vec::new();
    for sub in ["transcripts", "captures"] {
        for e in fs::read_dir(mock_api::harness::testdata_dir().join(sub)).unwrap() {
            let p = e.unwrap().path();
            sources.push((p.file_name().unwrap().to_owned(), fs::read(&p).unwrap()));
        }
    }
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut written = 0;
    for round in 0..12 {
        for (name, bytes) in &sources {
            let mut b = bytes.clone();
            // Flip, delete and insert bytes (including quotes, braces, backslashes, newlines).
            for _ in 0..(1 + rng.below(40)) {
                let i = rng.below(b.len());
                match rng.below(4) {
                    0 => {
                        let set = b"\"{}[]\\\n:,x\xff0";
                        b[i] = set[rng.below(set.len())];
                    }
                    1 => {
                        b.remove(i);
                    }
                    2 => b.insert(i, b"\"{}[]\\\n"[rng.below(7)]),
                    _ => b.truncate(i),
                }
                if b.is_empty() {
                    break;
                }
            }
            let dir = tmp.path().join(format!("r{round}"));
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join(name), &b).unwrap();
            written += 1;
        }
    }
    let r = audit_paths(&[tmp.path().to_path_buf()], &Limits::default());
    assert_eq!(r.sessions_scanned, written);
    let _ = render_text(&r);
    let _ = render_svg(&r);
    let _ = r.to_json().to_string();
}

#[test]
fn garbage_huge_lines_and_empty_files_never_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(d.join("empty.jsonl"), "").unwrap();
    fs::write(d.join("blank.jsonl"), "\n\n  \n").unwrap();
    fs::write(
        d.join("binary.jsonl"),
        [0u8, 159, 146, 150, b'\n', 255, b'{'],
    )
    .unwrap();
    // A 12 MiB line (longer than the read buffer) between two good ones.
    let huge = format!(
        "{{\"type\":\"user\",\"timestamp\":\"2026-11-30T09:00:01.000Z\",\"message\":{{\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"{}\"}}]}}}}",
        "x\\\"y".repeat(3 << 20)
    );
    let good =
        r#"{"type":"user","timestamp":"2026-11-30T09:00:00.000Z","message":{"content":"hi"}}"#;
    let end = r#"{"type":"assistant","timestamp":"2026-11-30T09:00:02.000Z","message":{"content":[],"stop_reason":"end_turn"}}"#;
    fs::write(d.join("huge.jsonl"), format!("{good}\n{huge}\n{end}\n")).unwrap();
    // Wrong types everywhere, timestamps out of range, deep nesting.
    let odd = [
        r#"{"type":7,"timestamp":true,"message":"x"}"#,
        r#"{"type":"assistant","timestamp":"9999-99-99T99:99:99Z","message":{"content":{"a":1}}}"#,
        r#"{"type":"user","timestamp":"2026-11-30T09:00:00Z","message":{"content":[1,"s",null,{"type":"tool_result"}]}}"#,
        r#"{"type":"assistant","timestamp":"0000-01-01T00:00:00Z","message":{"content":[{"type":"tool_use"}],"stop_reason":5}}"#,
        r#"{"type":"queue-operation","operation":"enqueue","timestamp":"2026-11-30T09:00:00.5+14:00"}"#,
        r#"{"t_ms":-5,"line":{}}"#,
        &format!("{{\"a\":{}1{}}}", "[".repeat(5000), "]".repeat(5000)),
    ]
    .join("\n");
    fs::write(d.join("odd.jsonl"), odd).unwrap();
    fs::write(
        d.join("odd.capture.jsonl"),
        "{\"t_ms\":1,\"line\":{\"type\":\"result\"}}\n{\"t_ms\":18446744073709551615,\"raw\":\"x\"}\n{\"t_ms\":2,\"exit\":5}\n[]\n",
    )
    .unwrap();
    let r = audit_paths(&[d.to_path_buf()], &Limits::default());
    assert_eq!(r.sessions_scanned, 6);
    assert_eq!(r.files_skipped, 0);
    // The huge line was read: the session has its three entries.
    let _ = render_text(&r);
    assert!(r.read.bytes > 12 << 20);
    let _ = render_svg(&r);
}

#[test]
fn bookkeeping_lines_are_read_up_to_their_type() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("s.jsonl");
    let lines = [
        // Read only to `type`: its odd payload is not looked at.
        r#"{"type":"api-request-shape","shape":{"tools":[1,2,{"x":"]"}]},"sessionId":"s"}"#,
        r#"{"type":"user","timestamp":"2026-11-30T09:00:00.000Z","sessionId":"s","message":{"content":"hi"}}"#,
        r#"{"type":"assistant","timestamp":"2026-11-30T09:00:05.000Z","message":{"content":[],"stop_reason":"end_turn"}}"#,
        // Cut while being written: no closing brace, no newline.
        r#"{"type":"api-request","params":{"model":"m","tools":[{"na"#,
    ];
    fs::write(&p, lines.join("\n")).unwrap();
    let r = audit_paths(&[p], &Limits::default());
    assert_eq!(
        (r.read.lines, r.read.bad_lines, r.read.truncated_lines),
        (4, 1, 1)
    );
    assert_eq!(r.sessions[0].session_id, "s");
    assert_eq!(r.sessions[0].longest_productive_ms, Some(5_000));
}

#[test]
fn a_folder_given_as_a_file_is_reported_and_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("looks-like.jsonl");
    fs::create_dir(&dir).unwrap();
    // Given as a file (as `discover` hands out a path it was told is a file).
    let found = watchdog_audit::scan::Discovery {
        files: vec![(dir.clone(), 0)],
        skipped: Vec::new(),
    };
    let r = watchdog_audit::audit_files(
        found,
        &Limits::default(),
        1,
        &|_| {},
        &watchdog_audit::as_given,
    );
    assert_eq!((r.files_skipped, r.sessions_scanned), (1, 0));
    let (file, reason) = &r.skipped[0];
    assert_eq!(*file, dir);
    assert!(!reason.is_empty());
}

//! The stdout line hook (`SupervisorConfig::on_stdout_line`): which lines it sees, in what
//! order, relative to the batches, and what a hook may do (use the handle, panic).
#![cfg(target_os = "linux")]

mod common;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_sdk_watchdog::{Batch, KillCause, Supervisor, SupervisorConfig, SupervisorHandle};
use common::{quick, sh};
use watchdog_core::LineKind;

const LIMIT: Duration = Duration::from_secs(60);

/// What the hook saw of one line.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    index: u64,
    bytes: Vec<u8>,
    kind: LineKind,
    top_level: bool,
    view_kind: Option<String>,
}

fn recording(cfg: SupervisorConfig) -> (SupervisorConfig, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let cfg = cfg.on_stdout_line(move |view, info| {
        log.lock().unwrap().push(Seen {
            index: info.index,
            bytes: info.bytes.to_vec(),
            kind: info.class.kind,
            top_level: info.top_level,
            view_kind: view.kind().map(|k| k.into_owned()),
        });
    });
    (cfg, seen)
}

#[tokio::test]
async fn the_hook_sees_each_parsed_line_once_in_order_before_its_batch() {
    let long = format!(r#"{{"type":"assistant","pad":"{}"}}"#, "x".repeat(100));
    let text = format!(
        "{}\n{}\nnot json\n\n{long}\n{}\r\nlast\n{}",
        r#"{"type":"system","subtype":"init","session_id":"s1"}"#,
        r#"{"type":"stream_event","event":{"type":"ping"},"session_id":"s1","parent_tool_use_id":"t1"}"#,
        r#"{"type":"result","subtype":"success","session_id":"s2"}"#,
        r#"{"type":"user","session_id":"s2"}"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out");
    std::fs::write(&file, &text).unwrap();
    // The 106-byte line is over the maximum: pieces, never shown to the hook.
    let (cfg, seen) = recording(SupervisorConfig {
        max_line: std::num::NonZeroUsize::new(100).unwrap(),
        ..quick()
    });
    let mut sup = Supervisor::spawn(sh(&format!("cat {}", file.display())), cfg).unwrap();
    let (mut bytes, mut index) = (Vec::new(), 0u64);
    tokio::time::timeout(LIMIT, async {
        while let Some(b) = sup.next_batch().await {
            let Batch::Stdout(b) = b else { continue };
            bytes.extend_from_slice(b.bytes());
            // Every parsed line of the batch was shown to the hook before it was handed over.
            let seen = seen.lock().unwrap();
            for m in b.lines() {
                let hooked = seen.iter().find(|s| s.index == index);
                let parsed = !m.piece && m.class.kind != LineKind::Unparseable;
                assert_eq!(hooked.is_some(), parsed, "line {index}");
                if let Some(s) = hooked {
                    assert_eq!(s.bytes, b.line(m));
                    assert_eq!(s.kind, m.class.kind);
                    assert_eq!(s.top_level, m.top_level);
                }
                index += 1;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(bytes, text.as_bytes());
    let report = sup.wait().await.unwrap();
    assert_eq!(report.stdout_lines, index);
    assert_eq!(report.hook_panics, 0);
    let seen = seen.lock().unwrap();
    let got: Vec<_> = seen
        .iter()
        .map(|s| (s.index, s.kind, s.view_kind.as_deref()))
        .collect();
    use LineKind as K;
    // 0 init, 1 ping, 2 not json, 3 empty, 4 and 5 pieces, 6 result, 7 last, 8 user (no `\n`).
    assert_eq!(
        got,
        [
            (0, K::System, Some("system")),
            (1, K::Ping, Some("stream_event")),
            (6, K::Result, Some("result")),
            (8, K::User, Some("user")),
        ]
    );
    assert_eq!(seen[2].bytes.last(), Some(&b'\r'));
    assert!(seen[0].top_level && !seen[1].top_level);
}

#[tokio::test]
async fn a_hook_may_use_the_handle_without_deadlock() {
    let handle: Arc<OnceLock<SupervisorHandle>> = Arc::new(OnceLock::new());
    let h = handle.clone();
    let cfg = quick().on_stdout_line(move |view, _| {
        let handle = h.get().expect("set before the child prints");
        handle.set_utilization(Some(0.5));
        if view.subtype().as_deref() == Some("stop") {
            handle.kill_now();
        }
    });
    // The child prints only once told to (so the handle is set), then would run for a minute.
    let script = r#"read go; echo '{"type":"system","subtype":"status"}'; echo '{"type":"system","subtype":"stop"}'; exec sleep 60"#;
    let mut sup = Supervisor::spawn(sh(script), cfg).unwrap();
    handle.set(sup.handle()).unwrap();
    sup.stdin().unwrap().write_line(b"go").await.unwrap();
    let report = tokio::time::timeout(LIMIT, async {
        while sup.next_batch().await.is_some() {}
        sup.wait().await.unwrap()
    })
    .await
    .expect("the kill asked for by the hook ends the run");
    let kill = report.kill.expect("killed");
    assert_eq!(kill.cause, KillCause::Requested);
}

#[tokio::test]
async fn a_panicking_hook_is_counted_and_loses_no_output() {
    let calls = Arc::new(Mutex::new(0u64));
    let c = calls.clone();
    let cfg = quick().on_stdout_line(move |_, info| {
        *c.lock().unwrap() += 1;
        if info.index % 2 == 0 {
            panic!("hook test panic on line {}", info.index);
        }
    });
    let script = r#"for i in 1 2 3 4 5; do echo '{"type":"system","subtype":"status"}'; done; printf 'tail'"#;
    let mut sup = Supervisor::spawn(sh(script), cfg).unwrap();
    let mut bytes = Vec::new();
    tokio::time::timeout(LIMIT, async {
        while let Some(b) = sup.next_batch().await {
            if let Batch::Stdout(b) = b {
                bytes.extend_from_slice(b.bytes());
            }
        }
    })
    .await
    .unwrap();
    let want = format!(
        "{}tail",
        "{\"type\":\"system\",\"subtype\":\"status\"}\n".repeat(5)
    );
    assert_eq!(bytes, want.as_bytes());
    let report = sup.wait().await.unwrap();
    // Lines 0, 2 and 4 panicked; every parsed line still got its call.
    assert_eq!(report.hook_panics, 3);
    assert_eq!(*calls.lock().unwrap(), 5);
    assert_eq!(report.stdout_lines, 6);
    assert_eq!(report.status.unwrap().code(), Some(0));
}

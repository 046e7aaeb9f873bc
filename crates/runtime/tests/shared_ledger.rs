//! The shared ledger (issue 42) keeps the file ledger's promise on real Redis and PostgreSQL
//! servers: exactly one claim wins among racing connections, a notice is recorded once, a
//! record that is not that session's marker is never taken for one, and a server that is gone
//! fails closed, with no password in any message.
//!
//! Needs the servers `scripts/test-fleet` starts (`AGENT_WATCHDOG_TEST_REDIS`,
//! `AGENT_WATCHDOG_TEST_POSTGRES`); the test that stops a server starts its own with
//! `scripts/fleet-servers`. Run by `scripts/test-fleet` (this target has `test = false`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Barrier};

use agent_sdk_watchdog::{FileLedger, LedgerBackend, LedgerUrl, SharedLedger};
use watchdog_core::recovery::*;
use watchdog_core::recovery::{SubagentKey, SubagentMarker};
use watchdog_core::{facts::ClaudeSessionId, facts::ResultFacts, Outcome};

const T: u64 = 1_796_030_000_000;

fn url(var: &str) -> LedgerUrl {
    let text = std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run scripts/test-fleet (it starts Redis and PostgreSQL)")
    });
    text.parse().unwrap()
}

fn backends() -> [LedgerUrl; 2] {
    [
        url("AGENT_WATCHDOG_TEST_REDIS"),
        url("AGENT_WATCHDOG_TEST_POSTGRES"),
    ]
}

/// A session id no other test (or earlier run against the same server) uses.
fn fresh_id() -> String {
    let n: u128 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
        ^ (u128::from(std::process::id()) << 64);
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let c = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let h = format!(
        "{:032x}",
        n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u128::from(c)
    );
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn cut_off(id: &str) -> TerminalFacts {
    let outcome = Outcome::ErrorResult(Box::new(ResultFacts {
        subtype: Some("success".into()),
        terminal_reason: Some("api_error".into()),
        stop_reason: Some("stop_sequence".into()),
        api_error: Some("max_output_tokens".into()),
        ..ResultFacts::default()
    }));
    TerminalFacts::new(outcome, T).with_session_id(ClaudeSessionId::parse(id).unwrap())
}

fn marker(id: &str, tag: &str) -> Marker {
    let facts = cut_off(id);
    let d = Recovery::default()
        .with_prompt(Trigger::OutputLimit, format!("continue [{tag}]"))
        .unwrap()
        .decide(&facts, &LedgerState::Fresh);
    Marker::for_continue(&facts, &d).unwrap()
}

fn subagent_marker(key: &SubagentKey, tag: &str) -> SubagentMarker {
    SubagentMarker {
        version: 1,
        session_id: key.session_id().to_owned(),
        agent_id: key.agent_id().to_owned(),
        agent_type: Some("general-purpose".into()),
        failure_id: None,
        error: Some("max_output_tokens".into()),
        created_at_ms: T,
        message: format!("continue [{tag}]"),
    }
}

#[test]
fn exactly_one_of_many_racing_connections_wins_and_the_notice_is_recorded_once() {
    for url in backends() {
        let id = fresh_id();
        let key = SubagentKey::new(&id, "a1b2c3d4e5f6a7b8").unwrap();
        let n = 16;
        let barrier = Arc::new(Barrier::new(n));
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (url, id, key, barrier) =
                    (url.clone(), id.clone(), key.clone(), barrier.clone());
                std::thread::spawn(move || {
                    // Each racer its own connection, as separate machines have.
                    let ledger = SharedLedger::open(&url).unwrap();
                    barrier.wait();
                    let won = Ledger::try_claim(&ledger, id.as_str(), &marker(&id, &i.to_string()));
                    let sub = Ledger::<SubagentKey, SubagentMarker>::try_claim(
                        &ledger,
                        &key,
                        &subagent_marker(&key, &i.to_string()),
                    );
                    let noticed = Ledger::record_notice(&ledger, id.as_str());
                    let sub_noticed =
                        Ledger::<SubagentKey, SubagentMarker>::record_notice(&ledger, &key);
                    (
                        i,
                        won.unwrap(),
                        sub.unwrap(),
                        noticed.unwrap(),
                        sub_noticed.unwrap(),
                    )
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let winners: Vec<_> = results.iter().filter(|r| r.1 == Claim::Won).collect();
        let sub_winners: Vec<_> = results.iter().filter(|r| r.2 == Claim::Won).collect();
        assert_eq!(winners.len(), 1, "{url}: {results:?}");
        assert_eq!(sub_winners.len(), 1, "{url}: {results:?}");
        assert_eq!(
            results.iter().filter(|r| r.3).count(),
            1,
            "{url}: one notice"
        );
        assert_eq!(
            results.iter().filter(|r| r.4).count(),
            1,
            "{url}: one notice"
        );
        // What is stored is the winner's marker, read back whole.
        let ledger = SharedLedger::open(&url).unwrap();
        let entry = Ledger::get(&ledger, id.as_str()).unwrap().unwrap();
        assert_eq!(
            entry.marker,
            marker(&id, &winners[0].0.to_string()),
            "{url}"
        );
        assert!(entry.notice_recorded);
        let sub = Ledger::<SubagentKey, SubagentMarker>::get(&ledger, &key)
            .unwrap()
            .unwrap();
        assert_eq!(
            sub.marker,
            subagent_marker(&key, &sub_winners[0].0.to_string())
        );
        // The same session in upper case is the same marker.
        assert_eq!(
            Ledger::try_claim(&ledger, id.to_uppercase().as_str(), &marker(&id, "late")).unwrap(),
            Claim::AlreadyClaimed
        );
        // No marker, no notice.
        assert!(
            !Ledger::record_notice(&ledger, fresh_id().as_str()).unwrap(),
            "{url}"
        );
        assert!(
            Ledger::get(&ledger, fresh_id().as_str()).unwrap().is_none(),
            "{url}"
        );
    }
}

/// Put `value` under the record `name` of the server at `url`, bypassing the ledger.
fn put_raw(url: &LedgerUrl, name: &str, value: &str) {
    let status = match url.backend() {
        LedgerBackend::Redis => Command::new("redis-cli")
            .args([
                "-u",
                url.secret(),
                "SET",
                &format!("agent-watchdog:{name}"),
                value,
            ])
            .output()
            .unwrap(),
        _ => Command::new("psql")
            .args([url.secret(), "-v", "ON_ERROR_STOP=1", "-qtAc"])
            .arg(format!(
                "INSERT INTO agent_watchdog_ledger (name, value) VALUES ('{name}', '{}') \
                 ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                value.replace('\'', "''")
            ))
            .output()
            .unwrap(),
    };
    assert!(status.status.success(), "{status:?}");
}

#[test]
fn a_record_of_another_backend_session_or_kind_is_never_misread() {
    let state = tempfile::tempdir().unwrap();
    let file = FileLedger::open(state.path()).unwrap();
    for url in backends() {
        let shared = SharedLedger::open(&url).unwrap();
        // A marker the file ledger wrote, moved to the server as its bytes: read back equal
        // (one format, one name, in every backend).
        let id = fresh_id();
        assert_eq!(
            Ledger::try_claim(&file, id.as_str(), &marker(&id, "file")).unwrap(),
            Claim::Won
        );
        let bytes = std::fs::read_to_string(file.marker_path(&id).unwrap()).unwrap();
        put_raw(&url, &format!("continued/{id}.json"), &bytes);
        assert_eq!(
            Ledger::get(&shared, id.as_str()).unwrap().unwrap().marker,
            marker(&id, "file")
        );
        // A marker claimed on the server is not one in another store: each is its own ledger.
        let only_here = fresh_id();
        assert_eq!(
            Ledger::try_claim(&shared, only_here.as_str(), &marker(&only_here, "x")).unwrap(),
            Claim::Won
        );
        assert!(Ledger::get(&file, only_here.as_str()).unwrap().is_none());
        // Under a session's name: another session's marker, a subagent's marker, garbage, an
        // empty value. Each is corrupt (and so claimed: never continued), never a marker.
        let key_of = |id: &str| SubagentKey::new(id, "a1b2c3d4e5f6a7b8").unwrap();
        let other = fresh_id();
        let cases = [
            marker(&other, "other").to_json(),
            subagent_marker(&key_of(&other), "sub").to_json(),
            "not json".to_owned(),
            String::new(),
            r#"{"version":1}"#.to_owned(),
        ];
        for (i, value) in cases.iter().enumerate() {
            let id = fresh_id();
            put_raw(&url, &format!("continued/{id}.json"), value);
            let e = Ledger::get(&shared, id.as_str()).expect_err(&format!("{url} case {i}"));
            assert!(matches!(e, LedgerError::Corrupt(_)), "{url} case {i}: {e}");
            assert_eq!(
                Ledger::try_claim(&shared, id.as_str(), &marker(&id, "y")).unwrap(),
                Claim::AlreadyClaimed,
                "{url} case {i}"
            );
        }
        // A session's marker under a subagent's name: corrupt too.
        let id = fresh_id();
        let key = key_of(&id);
        put_raw(
            &url,
            &format!("subagents/continued/{}", key.file_name()),
            &marker(&id, "session").to_json(),
        );
        assert!(matches!(
            Ledger::<SubagentKey, SubagentMarker>::get(&shared, &key),
            Err(LedgerError::Corrupt(_))
        ));
    }
}

/// A server of our own, stopped when dropped (or by the test).
struct OwnServer {
    dir: tempfile::TempDir,
    url: LedgerUrl,
}

fn fleet_servers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fleet-servers")
}

impl OwnServer {
    fn start(kind: &str) -> OwnServer {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(fleet_servers())
            .arg(kind)
            .arg(dir.path())
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success(), "cannot start {kind}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        // With a password in the URL: it must never show (the test servers trust loopback).
        let url = text.trim().replacen("://", "://fleet:Pa55-w0rd-x@", 1);
        let url = url.replacen(
            "://fleet:Pa55-w0rd-x@postgres@",
            "://postgres:Pa55-w0rd-x@",
            1,
        );
        OwnServer {
            dir,
            url: url.parse().unwrap(),
        }
    }

    fn stop(&self) {
        let out = Command::new(fleet_servers())
            .arg("stop")
            .arg(self.dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn a_server_that_goes_away_fails_closed_and_no_message_holds_the_password() {
    for kind in ["redis", "postgres"] {
        let server = OwnServer::start(kind);
        let url = server.url.clone();
        if kind == "redis" {
            // The test server has no password: Redis refuses AUTH, and says so without it.
            let e = SharedLedger::open(&url).unwrap_err().to_string();
            assert!(!e.contains("Pa55-w0rd-x"), "{e}");
            assert!(e.contains(":***@"), "{e}");
        }
        let plain: LedgerUrl = url
            .secret()
            .replace("fleet:Pa55-w0rd-x@", "")
            .parse()
            .unwrap();
        let url = if kind == "redis" { plain } else { url };
        let ledger = SharedLedger::open(&url).unwrap();
        let id = fresh_id();
        assert_eq!(
            Ledger::try_claim(&ledger, id.as_str(), &marker(&id, "1")).unwrap(),
            Claim::Won
        );
        server.stop();
        let id2 = fresh_id();
        let errors = [
            Ledger::try_claim(&ledger, id2.as_str(), &marker(&id2, "2")).map(|_| ()),
            Ledger::get(&ledger, id.as_str()).map(|_| ()),
            Ledger::record_notice(&ledger, id.as_str()).map(|_| ()),
            SharedLedger::open(&url).map(|_| ()),
        ];
        for e in errors {
            let e = e.expect_err(kind);
            assert!(matches!(e, LedgerError::Unavailable(_)), "{kind}: {e}");
            let text = e.to_string();
            assert!(!text.contains("Pa55-w0rd-x"), "{text}");
        }
    }
}

#[test]
fn nothing_can_be_reached_at_a_closed_port_and_that_fails_closed() {
    // A port nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for scheme in ["redis", "postgres"] {
        let url: LedgerUrl = format!("{scheme}://u:Pa55-w0rd-x@127.0.0.1:{port}/0")
            .parse()
            .unwrap();
        let e = SharedLedger::open(&url).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, LedgerError::Unavailable(_)), "{text}");
        assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
        assert!(!text.contains("Pa55-w0rd-x"), "{text}");
    }
}

#[test]
fn the_blocking_calls_work_in_a_multi_thread_runtime_and_refuse_a_single_thread_one() {
    let url = url("AGENT_WATCHDOG_TEST_REDIS");
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let id = fresh_id();
    let won = multi.block_on(async {
        let ledger = SharedLedger::open(&url).unwrap();
        // From a task too.
        let id2 = id.clone();
        let task = tokio::spawn(async move {
            let l = SharedLedger::open(&url).unwrap();
            Ledger::get(&l, id2.as_str()).map(|e| e.is_none())
        });
        let claimed = Ledger::try_claim(&ledger, id.as_str(), &marker(&id, "rt"));
        (claimed, task.await.unwrap())
    });
    assert!(matches!(won, (Ok(Claim::Won), Ok(_))), "{won:?}");
    let single = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = self::url("AGENT_WATCHDOG_TEST_REDIS");
    let refused = single.block_on(async { SharedLedger::open(&url).map(|_| ()) });
    let e = refused.unwrap_err().to_string();
    assert!(e.contains("single-thread"), "{e}");
    // Opened outside, used inside a single-thread runtime: an error, not a panic.
    let ledger = SharedLedger::open(&url).unwrap();
    let inside = single.block_on(async { Ledger::get(&ledger, id.as_str()).map(|_| ()) });
    assert!(inside.is_err());
    // And outside again: fine.
    assert!(Ledger::get(&ledger, id.as_str()).unwrap().is_some());
}

//! The file ledger keeps the subagent promise too: one marker per session id + agent id, claimed
//! by exactly one racer, durable across reopen, one notice, and every fault means "do not
//! continue".

use std::sync::{Arc, Barrier};

use agent_sdk_watchdog::FileLedger;
use watchdog_core::recovery::*;
use watchdog_core::recovery::{Claim, LedgerError, Recovery};

const SESSION: &str = "b042aa30-1f9b-40da-b416-11c34370df5c";
const AGENT: &str = "a02f401cf8728967a";

fn key(agent: &str) -> SubagentKey {
    SubagentKey::new(SESSION, agent).unwrap()
}

fn marker(agent: &str, failure: &str) -> SubagentMarker {
    let facts = SubagentFacts {
        key: key(agent),
        agent_type: Some("general-purpose".into()),
        end: SubagentEnd::OutputLimit,
        failure_id: Some(failure.into()),
        error: Some("cut off".into()),
        seen_at_ms: 1,
    };
    let d = Recovery::default().decide_subagent(&facts, &LedgerState::Fresh);
    SubagentMarker::for_continue(&facts, &d).unwrap()
}

#[test]
fn one_claim_per_agent_survives_a_reopen_and_sits_beside_the_session_markers() {
    let dir = tempfile::tempdir().unwrap();
    let l = FileLedger::open(dir.path()).unwrap();
    assert_eq!(
        Ledger::<SubagentKey, SubagentMarker>::get(&l, &key(AGENT)).unwrap(),
        None
    );
    let m = marker(AGENT, "u1");
    assert_eq!(
        Ledger::<SubagentKey, SubagentMarker>::try_claim(&l, &key(AGENT), &m).unwrap(),
        Claim::Won
    );
    let again = FileLedger::open(dir.path()).unwrap();
    assert_eq!(
        Ledger::<SubagentKey, SubagentMarker>::try_claim(&again, &key(AGENT), &marker(AGENT, "u9"))
            .unwrap(),
        Claim::AlreadyClaimed
    );
    let entry = Ledger::<SubagentKey, SubagentMarker>::get(&again, &key(AGENT))
        .unwrap()
        .unwrap();
    assert_eq!(entry.marker, m, "the first marker is kept");
    assert!(!entry.notice_recorded);
    // Another agent of the same session has its own marker.
    let other = "a0000000000000001";
    assert_eq!(
        Ledger::<SubagentKey, SubagentMarker>::try_claim(&again, &key(other), &marker(other, "u1"))
            .unwrap(),
        Claim::Won
    );
    let path = again.subagent_marker_path(&key(AGENT));
    assert_eq!(
        path,
        dir.path()
            .join("subagents/continued")
            .join(format!("{SESSION}.{AGENT}.json"))
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    // The session-level marker of the same session is untouched.
    assert_eq!(
        watchdog_core::recovery::Ledger::get(&again, SESSION).unwrap(),
        None
    );
}

#[test]
fn the_notice_is_recorded_once_and_only_after_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let l = FileLedger::open(dir.path()).unwrap();
    assert!(!Ledger::<SubagentKey, SubagentMarker>::record_notice(&l, &key(AGENT)).unwrap());
    Ledger::<SubagentKey, SubagentMarker>::try_claim(&l, &key(AGENT), &marker(AGENT, "u1"))
        .unwrap();
    assert!(Ledger::<SubagentKey, SubagentMarker>::record_notice(&l, &key(AGENT)).unwrap());
    assert!(!Ledger::<SubagentKey, SubagentMarker>::record_notice(&l, &key(AGENT)).unwrap());
    let state =
        LedgerState::from(Ledger::<SubagentKey, SubagentMarker>::get(&l, &key(AGENT)).unwrap());
    assert!(matches!(state, LedgerState::Noticed(_)));
}

#[test]
fn sixteen_threads_racing_on_one_agent_exactly_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let barrier = Arc::new(Barrier::new(16));
    let handles: Vec<_> = (0..16)
        .map(|i| {
            let (dir, barrier) = (dir.path().to_owned(), barrier.clone());
            std::thread::spawn(move || {
                let l = FileLedger::open(dir).unwrap();
                let m = marker(AGENT, &format!("u{i}"));
                barrier.wait();
                (
                    Ledger::<SubagentKey, SubagentMarker>::try_claim(&l, &key(AGENT), &m).unwrap(),
                    m,
                )
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let winners: Vec<_> = results.iter().filter(|(c, _)| *c == Claim::Won).collect();
    assert_eq!(winners.len(), 1);
    let l = FileLedger::open(dir.path()).unwrap();
    assert_eq!(
        Ledger::<SubagentKey, SubagentMarker>::get(&l, &key(AGENT))
            .unwrap()
            .unwrap()
            .marker,
        winners[0].1
    );
}

#[test]
fn a_corrupt_marker_is_an_error_never_a_fresh_start() {
    let dir = tempfile::tempdir().unwrap();
    let l = FileLedger::open(dir.path()).unwrap();
    Ledger::<SubagentKey, SubagentMarker>::try_claim(&l, &key(AGENT), &marker(AGENT, "u1"))
        .unwrap();
    std::fs::write(l.subagent_marker_path(&key(AGENT)), "{half").unwrap();
    assert!(matches!(
        Ledger::<SubagentKey, SubagentMarker>::get(&l, &key(AGENT)),
        Err(LedgerError::Corrupt(_))
    ));
    // A marker for another agent in this agent's file is corrupt too.
    let other = marker("a0000000000000001", "u1").to_json();
    std::fs::write(l.subagent_marker_path(&key(AGENT)), other).unwrap();
    assert!(matches!(
        Ledger::<SubagentKey, SubagentMarker>::get(&l, &key(AGENT)),
        Err(LedgerError::Corrupt(_))
    ));
}

#[cfg(unix)]
#[test]
fn an_unwritable_state_dir_refuses_the_claim() {
    use std::os::unix::fs::PermissionsExt;
    if is_root() {
        // Root ignores permissions; the file layout is still covered by the tests above.
        eprintln!("running as root: checking the claim fails on a file in place of the directory");
        let dir = tempfile::tempdir().unwrap();
        let l = FileLedger::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("subagents"), "not a dir").unwrap();
        assert!(Ledger::<SubagentKey, SubagentMarker>::try_claim(
            &l,
            &key(AGENT),
            &marker(AGENT, "u1")
        )
        .is_err());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let l = FileLedger::open(dir.path()).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o500)).unwrap();
    let r = Ledger::<SubagentKey, SubagentMarker>::try_claim(&l, &key(AGENT), &marker(AGENT, "u1"));
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(r.is_err(), "{r:?}");
}

#[cfg(unix)]
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// A subagent marker that is a FIFO or a link to `/dev/zero` is refused at once (never opened
/// for a blocking read, never read to the end) and counts as claimed.
#[cfg(unix)]
#[test]
fn a_marker_that_is_a_fifo_or_a_device_link_is_corrupt_and_claimed() {
    for fifo in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let l = FileLedger::open(dir.path()).unwrap();
        Ledger::<SubagentKey, SubagentMarker>::try_claim(&l, &key(AGENT), &marker(AGENT, "u1"))
            .unwrap();
        let path = l.subagent_marker_path(&key(AGENT));
        std::fs::remove_file(&path).unwrap();
        if fifo {
            rustix::fs::mkfifoat(
                rustix::fs::CWD,
                &path,
                rustix::fs::Mode::from_raw_mode(0o600),
            )
            .unwrap();
        } else {
            std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        }
        let err = Ledger::<SubagentKey, SubagentMarker>::get(&l, &key(AGENT)).unwrap_err();
        assert!(
            matches!(&err, LedgerError::Corrupt(m) if m.contains("not a regular file")),
            "{err}"
        );
        assert_eq!(
            Ledger::<SubagentKey, SubagentMarker>::try_claim(&l, &key(AGENT), &marker(AGENT, "u2"))
                .unwrap(),
            Claim::AlreadyClaimed
        );
    }
}

//! The file ledger keeps the promise of issue 6: a stopped session is continued at most once,
//! whatever races, crashes, reruns or broken state directories happen around it.
//!
//! The process tests re-run this test binary as racers: `racer_process` is an ignored test
//! that does nothing unless `LEDGER_RACER_DIR` is set.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use agent_sdk_watchdog::{default_state_dir, FileLedger};
use watchdog_core::recovery::{
    Claim, Decision, Ledger, LedgerError, LedgerState, Marker, Notice, Recovery, Skip,
    TerminalFacts, Trigger,
};
use watchdog_core::{facts::ClaudeSessionId, facts::ResultFacts, Outcome};

const ID: &str = "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc";
const T: u64 = 1_796_030_000_000;

fn output_limit_prompt() -> String {
    Recovery::default().prompt(Trigger::OutputLimit).to_owned()
}

fn max_tokens() -> Outcome {
    Outcome::ErrorResult(Box::new(ResultFacts {
        subtype: Some("success".into()),
        terminal_reason: Some("api_error".into()),
        stop_reason: Some("stop_sequence".into()),
        api_error: Some("max_output_tokens".into()),
        api_error_status: None,
        ..ResultFacts::default()
    }))
}

fn cut_off(id: &str) -> TerminalFacts {
    TerminalFacts::new(max_tokens(), T)
        .with_session_id(ClaudeSessionId::parse(id).unwrap())
        .with_usage(Some(0.0032), Some(4))
}

/// The marker a driver would write for `facts`, with `tag` in its prompt to tell claimants apart.
fn marker(facts: &TerminalFacts, tag: &str) -> Marker {
    let d = Recovery::default()
        .with_prompt(
            Trigger::OutputLimit,
            format!("{} [{tag}]", output_limit_prompt()),
        )
        .unwrap()
        .decide(facts, &LedgerState::Fresh);
    Marker::for_continue(facts, &d).expect("a continue decision")
}

/// What a driver does after a run ended (the protocol in the core recovery docs), fail closed:
/// the prompt to continue with, or `None`.
fn continuation(r: &Recovery, ledger: &dyn Ledger, facts: &TerminalFacts) -> Option<String> {
    let id = facts.session_id.as_ref()?.as_str();
    let state = LedgerState::from(ledger.get(id).ok()?);
    let d = r.decide(facts, &state);
    let marker = Marker::for_continue(facts, &d)?;
    match ledger.try_claim(id, &marker) {
        Ok(Claim::Won) => Some(marker.prompt),
        Ok(Claim::AlreadyClaimed) | Err(_) => None,
    }
}

/// The notice a driver shows after a run ended, if any (shown only when recorded first).
fn notice(r: &Recovery, ledger: &dyn Ledger, facts: &TerminalFacts) -> Option<Box<Notice>> {
    let id = facts.session_id.as_ref()?.as_str();
    let Decision::Notice(n) = r.decide(facts, &ledger.get(id).ok()?.into()) else {
        return None;
    };
    ledger.record_notice(id).ok()?.then_some(n)
}

/// Every path below `dir`, relative to it.
fn tree(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.insert(p.strip_prefix(dir).unwrap().to_path_buf());
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Claims and what is stored.

#[test]
fn the_first_claim_wins_every_later_one_is_refused_and_get_returns_the_marker() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = FileLedger::open(tmp.path()).unwrap();
    assert_eq!(
        ledger.get(ID).unwrap(),
        None,
        "a fresh session has no marker"
    );
    let first = marker(&cut_off(ID), "first");
    assert_eq!(ledger.try_claim(ID, &first).unwrap(), Claim::Won);
    let second = marker(&cut_off(ID), "second");
    assert_eq!(
        ledger.try_claim(ID, &second).unwrap(),
        Claim::AlreadyClaimed
    );
    let entry = ledger.get(ID).unwrap().expect("the marker");
    assert_eq!(
        entry.marker, first,
        "a refused claim never overwrites the marker"
    );
    assert!(!entry.notice_recorded);
    assert!(
        tree(tmp.path())
            .iter()
            .all(|p| !p.to_string_lossy().contains(".tmp")),
        "no temporary files are left behind: {:?}",
        tree(tmp.path())
    );
}

#[test]
fn the_marker_is_json_on_disk_with_trigger_time_original_facts_and_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = FileLedger::open(tmp.path()).unwrap();
    let m = marker(&cut_off(ID), "x");
    ledger.try_claim(ID, &m).unwrap();
    let path = ledger.marker_path(ID).unwrap();
    assert_eq!(
        path,
        tmp.path().join("continued").join(format!("{ID}.json"))
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["session_id"], ID);
    assert_eq!(v["trigger"], "output_limit");
    assert_eq!(v["created_at_ms"], T);
    assert_eq!(v["original"]["api_error"], "max_output_tokens");
    assert_eq!(v["original"]["num_turns"], 4);
    assert_eq!(v["prompt"], m.prompt);
    assert_eq!(Marker::from_json(&v.to_string()).unwrap(), m);
}

#[cfg(unix)]
#[test]
fn the_state_is_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("new/state");
    let ledger = FileLedger::open(&dir).unwrap();
    ledger.try_claim(ID, &marker(&cut_off(ID), "x")).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode(&dir),
        0o700,
        "prompts and session ids are not for other users"
    );
    assert_eq!(mode(&ledger.marker_path(ID).unwrap()), 0o600);
}

#[test]
fn one_uuid_has_one_marker_whatever_its_case() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = FileLedger::open(tmp.path()).unwrap();
    let upper = ID.to_ascii_uppercase();
    assert_eq!(
        ledger
            .try_claim(upper.as_str(), &marker(&cut_off(&upper), "upper"))
            .unwrap(),
        Claim::Won
    );
    assert_eq!(
        ledger
            .try_claim(ID, &marker(&cut_off(ID), "lower"))
            .unwrap(),
        Claim::AlreadyClaimed
    );
    assert!(ledger.get(ID).unwrap().is_some());
}

#[test]
fn a_temporary_file_left_by_a_crash_before_the_marker_does_not_block_the_continuation() {
    // A crash before the marker was published means nothing was continued yet.
    let tmp = tempfile::tempdir().unwrap();
    let ledger = FileLedger::open(tmp.path()).unwrap();
    let stale = tmp.path().join(format!("continued/.{ID}.json.1.0.tmp"));
    std::fs::write(&stale, "{\"version\":1").unwrap();
    assert_eq!(ledger.get(ID).unwrap(), None);
    assert_eq!(
        ledger.try_claim(ID, &marker(&cut_off(ID), "x")).unwrap(),
        Claim::Won
    );
}

#[test]
fn the_notice_is_recorded_once_and_only_after_a_marker() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = FileLedger::open(tmp.path()).unwrap();
    assert!(!ledger.record_notice(ID).unwrap(), "no marker, no notice");
    assert!(!ledger.notice_path(ID).unwrap().exists());
    ledger.try_claim(ID, &marker(&cut_off(ID), "x")).unwrap();
    assert!(
        ledger.record_notice(ID).unwrap(),
        "the first notice is shown"
    );
    assert!(!ledger.record_notice(ID).unwrap());
    let rerun = FileLedger::open(tmp.path()).unwrap();
    assert!(
        !rerun.record_notice(ID).unwrap(),
        "never twice, across restarts"
    );
    assert!(rerun.get(ID).unwrap().unwrap().notice_recorded);
}

// ---------------------------------------------------------------------------------------------
// Races.

#[test]
fn sixteen_threads_racing_on_one_session_exactly_one_wins_and_its_marker_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    // Several sessions, to give the race several chances to go wrong.
    for round in 0..8u32 {
        let id = format!("90455ab9-05b5-4ba0-9d10-{round:012x}");
        let barrier = Arc::new(Barrier::new(16));
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let (barrier, dir, id) = (barrier.clone(), tmp.path().to_owned(), id.clone());
                std::thread::spawn(move || {
                    // Each thread opens its own ledger, as separate drivers would.
                    let ledger = FileLedger::open(dir).unwrap();
                    let m = marker(&cut_off(&id), &format!("thread {i}"));
                    barrier.wait();
                    (i, ledger.try_claim(id.as_str(), &m).unwrap())
                })
            })
            .collect();
        let winners: Vec<usize> = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|(_, c)| *c == Claim::Won)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        let stored = FileLedger::open(tmp.path())
            .unwrap()
            .get(id.as_str())
            .unwrap()
            .unwrap();
        assert!(stored
            .marker
            .prompt
            .ends_with(&format!("[thread {}]", winners[0])));
    }
}

#[test]
fn sixteen_threads_racing_to_record_the_notice_show_it_once() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = Arc::new(FileLedger::open(tmp.path()).unwrap());
    ledger.try_claim(ID, &marker(&cut_off(ID), "x")).unwrap();
    let barrier = Arc::new(Barrier::new(16));
    let shown = (0..16)
        .map(|_| {
            let (ledger, barrier) = (ledger.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                ledger.record_notice(ID).unwrap()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|shown| *shown)
        .count();
    assert_eq!(shown, 1);
}

const RACER_DIR: &str = "LEDGER_RACER_DIR";
const RACER_TAG: &str = "LEDGER_RACER_TAG";
const RACER_START_MS: &str = "LEDGER_RACER_START_MS";
const RACER_SESSIONS: &str = "LEDGER_RACER_SESSIONS";
const RACER_HANG: &str = "LEDGER_RACER_HANG";

/// The `n`th session of a process race.
fn race_session(n: u32) -> String {
    format!("77c4a83f-638f-4202-a655-{n:012x}")
}

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Not a test: the body of a racer process started by the process tests. It claims sessions
/// `0..LEDGER_RACER_SESSIONS` in order, from a common start time, printing each result.
#[test]
#[ignore = "helper process for the racing tests; does nothing on its own"]
fn racer_process() {
    let Some(dir) = std::env::var_os(RACER_DIR) else {
        return;
    };
    let tag = std::env::var(RACER_TAG).unwrap();
    let sessions: u32 = std::env::var(RACER_SESSIONS).unwrap().parse().unwrap();
    let ledger = FileLedger::open(PathBuf::from(dir)).unwrap();
    let markers: Vec<(String, Marker)> = (0..sessions)
        .map(|n| (race_session(n), marker(&cut_off(&race_session(n)), &tag)))
        .collect();
    if let Ok(start) = std::env::var(RACER_START_MS) {
        let start: u64 = start.parse().unwrap();
        while epoch_ms() < start {
            std::hint::spin_loop();
        }
    }
    for (n, (id, m)) in markers.iter().enumerate() {
        let claim = ledger.try_claim(id.as_str(), m).unwrap();
        println!("\nracer-result {n} {tag} {claim:?}");
    }
    if std::env::var_os(RACER_HANG).is_some() {
        // Claimed and about to continue: stay here until killed.
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

fn spawn_racer(dir: &Path, tag: &str, sessions: u32, extra: &[(&str, String)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "racer_process",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(RACER_DIR, dir)
    .env(RACER_TAG, tag)
    .env(RACER_SESSIONS, sessions.to_string())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

#[test]
fn four_processes_racing_on_one_session_exactly_one_wins_and_its_marker_is_kept() {
    const SESSIONS: u32 = 64;
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    // All four start claiming at the same moment, on the same 64 sessions in the same order,
    // so they collide on many of them.
    let start = (epoch_ms() + 700).to_string();
    let racers: Vec<Child> = (0..4)
        .map(|i| {
            let tag = format!("process-{i}");
            spawn_racer(&state, &tag, SESSIONS, &[(RACER_START_MS, start.clone())])
        })
        .collect();
    let mut winners = vec![Vec::new(); SESSIONS as usize];
    let mut results = 0;
    for racer in racers {
        let out = racer.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        for line in stdout
            .lines()
            .filter_map(|l| l.strip_prefix("racer-result "))
        {
            let [n, tag, claim] = line.split(' ').collect::<Vec<_>>()[..] else {
                panic!("{line}")
            };
            results += 1;
            match claim {
                "Won" => winners[n.parse::<usize>().unwrap()].push(tag.to_owned()),
                "AlreadyClaimed" => {}
                other => panic!("{other}"),
            }
        }
    }
    assert_eq!(results, 4 * SESSIONS, "every racer reported every session");
    let ledger = FileLedger::open(&state).unwrap();
    for (n, w) in winners.iter().enumerate() {
        assert_eq!(w.len(), 1, "session {n}: winners {w:?}");
        let stored = ledger
            .get(race_session(n as u32).as_str())
            .unwrap()
            .unwrap();
        assert!(
            stored.marker.prompt.ends_with(&format!("[{}]", w[0])),
            "{stored:?}"
        );
    }
}

#[test]
fn a_process_killed_right_after_claiming_never_gets_a_second_continuation() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let id = race_session(0);
    let mut racer = spawn_racer(&state, "killed", 1, &[(RACER_HANG, "1".into())]);
    let marker_path = state.join("continued").join(format!("{id}.json"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker_path.exists() {
        assert!(
            Instant::now() < deadline,
            "the racer never wrote its marker"
        );
        assert!(
            racer.try_wait().unwrap().is_none(),
            "the racer exited early"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    racer.kill().unwrap(); // SIGKILL: no destructor, no cleanup
    let status = racer.wait().unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "killed, not exited: {status:?}");
    }
    assert!(!status.success());

    // The rerun sees the same cut-off run: no second continuation.
    let r = Recovery::default();
    let rerun = FileLedger::open(&state).unwrap();
    assert_eq!(
        rerun
            .try_claim(id.as_str(), &marker(&cut_off(&id), "rerun"))
            .unwrap(),
        Claim::AlreadyClaimed
    );
    assert_eq!(continuation(&r, &rerun, &cut_off(&id)), None);
    let stored = rerun.get(id.as_str()).unwrap().unwrap();
    assert!(stored.marker.prompt.ends_with("[killed]"));
}

// ---------------------------------------------------------------------------------------------
// Bad input and broken state: fail closed.

#[test]
fn invalid_session_ids_are_rejected_without_touching_the_filesystem() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let ledger = FileLedger::open(&state).unwrap();
    let before = tree(tmp.path());
    let m = marker(&cut_off(ID), "x");
    for bad in [
        "",
        "x",
        "../x",
        "../../../../../../../../../../../../tmp",
        "../90455ab9-05b5-4ba0-9d10-01a53fd0bc",
        "90455ab9/05b5-4ba0-9d10-01a53fd0bcdc",
        "/tmp/5ab9-05b5-4ba0-9d10-01a53fd0bcdc",
        "90455ab9-05b5-4ba0-9d10-01a53fd0bcd\0",
        "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc.json",
    ] {
        let invalid =
            |r: Result<_, LedgerError>| matches!(r, Err(LedgerError::InvalidSessionId(_)));
        assert!(invalid(ledger.try_claim(bad, &m).map(|_| ())), "{bad:?}");
        assert!(invalid(ledger.get(bad).map(|_| ())), "{bad:?}");
        assert!(invalid(ledger.record_notice(bad).map(|_| ())), "{bad:?}");
        assert!(invalid(ledger.marker_path(bad).map(|_| ())), "{bad:?}");
    }
    assert_eq!(tree(tmp.path()), before, "nothing was created anywhere");
}

#[test]
fn an_unwritable_state_dir_is_a_clear_error_naming_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    // Tests may run as root, for whom permissions are no obstacle: a file in the way is.
    let file = tmp.path().join("file");
    std::fs::write(&file, "").unwrap();
    let dir = file.join("sub");
    let err = FileLedger::open(&dir).unwrap_err();
    let LedgerError::Unavailable(msg) = &err else {
        panic!("{err:?}")
    };
    let text = err.to_string();
    assert!(text.starts_with("recovery ledger unavailable: "), "{text}");
    assert!(
        msg.contains(&*dir.join("continued").to_string_lossy()),
        "{msg}"
    );
    assert!(msg.contains("os error"), "the OS error is named: {msg}");
}

#[test]
fn a_state_dir_that_breaks_after_opening_yields_no_continuation() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = FileLedger::open(tmp.path()).unwrap();
    let continued = tmp.path().join("continued");
    std::fs::remove_dir(&continued).unwrap();
    std::fs::write(&continued, "").unwrap();
    let err = ledger
        .try_claim(ID, &marker(&cut_off(ID), "x"))
        .unwrap_err();
    assert!(
        matches!(&err, LedgerError::Unavailable(m) if m.contains(&*continued.to_string_lossy())),
        "{err}"
    );
    assert_eq!(
        continuation(&Recovery::default(), &ledger, &cut_off(ID)),
        None
    );
}

#[test]
fn a_corrupt_or_partial_marker_counts_as_claimed() {
    let r = Recovery::default();
    for (i, content) in [
        "",
        "{\"version\":1",
        "not json at all",
        // A well-formed marker of another session under this name.
        &marker(&cut_off("77c4a83f-638f-4202-a655-fee981c37e0c"), "other").to_json(),
    ]
    .into_iter()
    .enumerate()
    {
        let tmp = tempfile::tempdir().unwrap();
        let ledger = FileLedger::open(tmp.path()).unwrap();
        let path = ledger.marker_path(ID).unwrap();
        std::fs::write(&path, content).unwrap();
        assert_eq!(
            ledger.try_claim(ID, &marker(&cut_off(ID), "x")).unwrap(),
            Claim::AlreadyClaimed,
            "case {i}"
        );
        let err = ledger.get(ID).unwrap_err();
        assert!(
            matches!(&err, LedgerError::Corrupt(m) if m.contains(&*path.to_string_lossy())),
            "case {i}: {err}"
        );
        assert_eq!(
            err.to_string().matches("corrupt").count(),
            1,
            "said once, case {i}: {err}"
        );
        assert_eq!(continuation(&r, &ledger, &cut_off(ID)), None, "case {i}");
        assert!(notice(&r, &ledger, &cut_off(ID)).is_none(), "case {i}");
    }
}

#[test]
fn default_state_dir_follows_xdg_then_home() {
    // An absolute path on this platform (a drive on Windows).
    let abs = |p: &str| {
        if cfg!(windows) {
            format!(r"C:{}", p.replace('/', r"\"))
        } else {
            p.to_owned()
        }
    };
    let (xdg, home) = (abs("/xdg/state"), abs("/home/ada"));
    let s = |v: &str| Some(OsStr::new(v).to_owned());
    assert_eq!(
        default_state_dir(s(&xdg).as_deref(), s(&home).as_deref()),
        Some(PathBuf::from(&xdg).join("agent-watchdog"))
    );
    for ignored_xdg in [None, s(""), s("relative/state")] {
        assert_eq!(
            default_state_dir(ignored_xdg.as_deref(), s(&home).as_deref()),
            Some(PathBuf::from(&home).join(".local/state/agent-watchdog")),
            "{ignored_xdg:?}"
        );
    }
    let s = |v: &'static str| Some(OsStr::new(v));
    assert_eq!(default_state_dir(None, None), None);
    assert_eq!(default_state_dir(s(""), s("")), None);
}

// ---------------------------------------------------------------------------------------------
// The whole chain, each step a fresh process (a new FileLedger on the same directory).

#[test]
fn the_full_chain_continue_once_then_one_notice_then_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let r = Recovery::default();
    let first = cut_off(ID);

    // The user's run is cut off: the first claim wins, continue.
    let prompt = continuation(&r, &FileLedger::open(tmp.path()).unwrap(), &first);
    assert_eq!(prompt.as_deref(), Some(output_limit_prompt().as_str()));

    // The same trigger delivered again (a rerun, a duplicate event): the marker exists, so
    // no second continuation.
    let rerun = FileLedger::open(tmp.path()).unwrap();
    assert_eq!(continuation(&r, &rerun, &first), None);

    // The continued run is cut off too: exactly one notice, with both runs' facts.
    let again = TerminalFacts::new(max_tokens(), T + 60_000)
        .with_session_id(ClaudeSessionId::parse(ID).unwrap())
        .with_usage(Some(0.01), Some(5));
    let n = notice(&r, &FileLedger::open(tmp.path()).unwrap(), &again).expect("one notice");
    assert_eq!(n.session_id, ID);
    assert_eq!(
        (n.first.num_turns, n.continued.num_turns),
        (Some(4), Some(5))
    );
    assert_eq!(
        continuation(&r, &FileLedger::open(tmp.path()).unwrap(), &again),
        None
    );

    // A further trigger: nothing at all.
    let later = FileLedger::open(tmp.path()).unwrap();
    assert!(notice(&r, &later, &again).is_none());
    assert_eq!(continuation(&r, &later, &again), None);
    assert_eq!(
        r.decide(&again, &later.get(ID).unwrap().into()),
        Decision::Nothing(Skip::AlreadyNoticed)
    );
}

/// A marker path that holds something other than a regular file (a FIFO with no writer, a link
/// to an endless device, a directory, a huge file) is answered at once, never blocks or fills
/// memory, and counts as claimed with an error that says what it is.
#[cfg(unix)]
#[test]
fn a_marker_that_is_not_a_regular_file_is_refused_at_once_and_claimed() {
    let r = Recovery::default();
    type Make = fn(&Path);
    let cases: [(&str, Make, &str); 5] = [
        (
            "fifo",
            |p| {
                rustix::fs::mkfifoat(rustix::fs::CWD, p, rustix::fs::Mode::from_raw_mode(0o600))
                    .unwrap()
            },
            "a FIFO",
        ),
        (
            "zero",
            |p| std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
            "a symbolic link",
        ),
        (
            "urandom",
            |p| std::os::unix::fs::symlink("/dev/urandom", p).unwrap(),
            "a symbolic link",
        ),
        ("dir", |p| std::fs::create_dir(p).unwrap(), "a directory"),
        (
            "huge",
            |p| std::fs::File::create(p).unwrap().set_len(8 << 30).unwrap(),
            "larger than",
        ),
    ];
    for (name, make, what) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let ledger = FileLedger::open(tmp.path()).unwrap();
        make(&ledger.marker_path(ID).unwrap());
        let started = Instant::now();
        let err = ledger.get(ID).unwrap_err();
        assert!(
            matches!(&err, LedgerError::Corrupt(m) if m.contains(what)),
            "{name}: {err}"
        );
        assert_eq!(
            ledger.try_claim(ID, &marker(&cut_off(ID), "x")).unwrap(),
            Claim::AlreadyClaimed,
            "{name}"
        );
        assert_eq!(continuation(&r, &ledger, &cut_off(ID)), None, "{name}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{name}: took {:?}",
            started.elapsed()
        );
    }
}

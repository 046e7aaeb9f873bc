//! Every bad value names what the user wrote, and the range it must be in: a bad
//! `AGENT_WATCHDOG_*` value names the variable (never the flag it stands for), a bad flag value
//! names the flag, in `run`, `replay`, `audit` and `claude-watchdog`; a value that starts with
//! `-` (`--max-rss -1`) is the flag's bad value, not clap's advice to write `-- -1`; a ledger URL
//! never shows its password; the lenient readers (`hook`, the telemetry) say one line naming
//! the variable and go on. The cases come from the option table, so a new option is covered
//! by being added to it.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use agent_watchdog::options::{self, OptionSpec, Reader, ValueKind};

mod common;

use common::{script, stderr, watchdog};

const DROP_IN: &str = env!("CARGO_BIN_EXE_claude-watchdog");

/// A value every option of `kind` refuses (`None`: the kind takes any text: a path).
fn bad_value(kind: ValueKind) -> Option<OsString> {
    match kind {
        ValueKind::PositiveDuration
        | ValueKind::Duration
        | ValueKind::Factor
        | ValueKind::Fraction
        | ValueKind::NonZeroFraction
        | ValueKind::Size
        | ValueKind::Milliseconds => Some("-1".into()),
        ValueKind::Switch => Some("maybe".into()),
        ValueKind::LedgerUrl => Some("mysql://admin:hunter2@db.example/x".into()),
        // Names are any text, but text.
        ValueKind::List => Some(OsStr::from_bytes(b"Write,\xff").to_owned()),
        ValueKind::Path => None,
        other => panic!("a new kind of value, {other:?}: give it a bad value here"),
    }
}

/// How a reader runs with `args` (flags) and `env` (variables): its output.
fn run_reader(reader: Reader, args: &[OsString], env: &[(&str, &OsStr)], dir: &Path) -> Output {
    let capture = dir.join("empty.jsonl");
    std::fs::write(&capture, "").unwrap();
    let mut cmd = match reader {
        Reader::Run => {
            let mut c = watchdog();
            c.arg("run").args(args).args(["--", "true"]);
            c
        }
        Reader::ReplayAudit => {
            let mut c = watchdog();
            c.arg("replay").args(args).arg(&capture);
            c
        }
        Reader::DropIn => {
            let claude = script(dir, "claude", "exit 0");
            let mut c = Command::new(DROP_IN);
            for (k, _) in std::env::vars_os() {
                if k.to_string_lossy().starts_with(options::ENV_PREFIX) {
                    c.env_remove(k);
                }
            }
            c.env("AGENT_WATCHDOG_CLAUDE", claude)
                .args(["-p", "hi"])
                .stdin(Stdio::null());
            c
        }
        Reader::Hook => {
            let mut c = watchdog();
            c.arg("hook").stdin(Stdio::null());
            c
        }
        Reader::Telemetry => {
            let mut c = watchdog();
            c.args(["run", "--", "true"])
                .env("AGENT_WATCHDOG_TELEMETRY", "1")
                .env("OTEL_METRICS_EXPORTER", "none")
                .env("OTEL_LOGS_EXPORTER", "none");
            c
        }
        other => panic!("a new reader, {other:?}: run it here"),
    };
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// The first line of stderr: what a usage error says.
fn first_line(out: &Output) -> String {
    stderr(out).lines().next().unwrap_or_default().to_owned()
}

/// A refused value: exit 2, one line naming `who` and the option's range, nothing that names
/// the other way of setting it, no clap advice, no password.
fn assert_refused(out: &Output, o: &OptionSpec, who: &str, other: Option<&str>, what: &str) {
    let line = first_line(out);
    assert_eq!(out.status.code(), Some(2), "{what}: {}", stderr(out));
    assert!(line.contains(who), "{what}: does not name {who}: {line}");
    assert!(line.contains(o.range()), "{what}: no range: {line}");
    if let Some(other) = other {
        assert!(!line.contains(other), "{what}: names {other}: {line}");
    }
    let all = stderr(out);
    assert!(
        !all.contains("tip:") && !all.contains("-- -1"),
        "{what}: {all}"
    );
    assert!(
        !all.contains("hunter2"),
        "{what}: the password shows: {all}"
    );
}

#[test]
fn every_bad_variable_names_the_variable_in_every_strict_reader() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for o in options::OPTIONS {
        let Some(bad) = bad_value(o.kind) else {
            continue;
        };
        let flag = o.flag.map(|f| format!("--{f}"));
        for reader in [Reader::Run, Reader::ReplayAudit, Reader::DropIn] {
            if !o.is_read_by(reader) {
                continue;
            }
            let out = run_reader(reader, &[], &[(o.env, &bad)], dir.path());
            let what = format!("{reader:?} {}={bad:?}", o.env);
            assert_refused(&out, o, o.env, flag.as_deref(), &what);
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked} cases");
}

#[test]
fn every_bad_flag_value_names_the_flag_and_its_range() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for o in options::OPTIONS {
        let (Some(flag), Some(bad)) = (o.flag, bad_value(o.kind)) else {
            continue;
        };
        // A switch takes no value on the command line.
        if o.kind == ValueKind::Switch {
            continue;
        }
        for reader in [Reader::Run, Reader::ReplayAudit] {
            if !o.is_read_by(reader) {
                continue;
            }
            let mut joined = OsString::from(format!("--{flag}="));
            joined.push(&bad);
            for args in [vec![format!("--{flag}").into(), bad.clone()], vec![joined]] {
                let out = run_reader(reader, &args, &[], dir.path());
                let what = format!("{reader:?} {args:?}");
                assert_refused(&out, o, &format!("'--{flag}"), Some(o.env), &what);
                checked += 1;
            }
        }
    }
    assert!(checked >= 40, "{checked} cases");
}

#[test]
fn the_flag_wins_over_its_variable_and_is_the_one_named() {
    let dir = tempfile::tempdir().unwrap();
    for o in options::OPTIONS {
        let (Some(flag), Some(bad), Some(good)) = (o.flag, bad_value(o.kind), o.default_value())
        else {
            continue;
        };
        if o.kind == ValueKind::Switch || !o.is_read_by(Reader::Run) {
            continue;
        }
        // A bad variable under a good flag: the flag wins, nothing is refused.
        let args = [format!("--{flag}").into(), good.into()];
        let out = run_reader(Reader::Run, &args, &[(o.env, &bad)], dir.path());
        assert_ne!(out.status.code(), Some(2), "--{flag}: {}", stderr(&out));
        // A bad flag under a good variable: the flag is named.
        let args = [format!("--{flag}").into(), bad.clone()];
        let out = run_reader(Reader::Run, &args, &[(o.env, OsStr::new(good))], dir.path());
        assert_refused(
            &out,
            o,
            &format!("'--{flag}"),
            Some(o.env),
            &format!("--{flag}"),
        );
    }
}

#[test]
fn a_value_that_starts_with_a_dash_is_the_flags_value() {
    // `--max-rss -1` was "unexpected argument '-1' found; to pass '-1' as a value, use '-- -1'":
    // wrong advice for `run`, where `--` starts the command.
    let dir = tempfile::tempdir().unwrap();
    for (args, flag) in [
        (&["--max-rss", "-1"][..], "--max-rss"),
        (&["--idle", "-5m"], "--idle"),
        (&["--extend-factor", "-2"], "--extend-factor"),
        (&["--warn-at", "-0.5"], "--warn-at"),
        (&["--grace", "-1s"], "--grace"),
    ] {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let out = run_reader(Reader::Run, &args, &[], dir.path());
        let o = options::by_flag(&flag[2..]).unwrap();
        assert_refused(&out, o, &format!("'{flag}"), Some(o.env), flag);
    }
}

#[test]
fn the_lenient_readers_name_the_variable_and_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for o in options::OPTIONS {
        let Some(bad) = bad_value(o.kind) else {
            continue;
        };
        for reader in [Reader::Hook, Reader::Telemetry] {
            // The hook reads a ledger URL only where a continuation would use it.
            if !o.is_read_by(reader) || o.kind == ValueKind::LedgerUrl {
                continue;
            }
            let out = run_reader(reader, &[], &[(o.env, &bad)], dir.path());
            let what = format!("{reader:?} {}={bad:?}", o.env);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(0), "{what}: {err}");
            let line = err.lines().find(|l| l.contains(o.env));
            assert!(line.is_some(), "{what}: the variable is not named: {err}");
            checked += 1;
        }
    }
    assert!(checked >= 3, "{checked} cases");
}

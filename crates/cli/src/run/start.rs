//! The start of one supervised run: the command as the child runs it, the supervisor's config,
//! the spawn, and the capture's `start` record ([`start`]).

use std::ffi::OsString;

use agent_sdk_watchdog::{Facility, Supervisor, SupervisorConfig};
use watchdog_core::{facts::ClaudeSessionId, Dialect, SessionConfig};
use watchdog_host::capture::Record;
use watchdog_host::claude_code::session::RESUME_TURN_VARS;

use super::config::RunConfig;
use super::host::Host;
use super::stdin;
use crate::exit_code;
use crate::status::Status;

/// A child started under the supervisor: what the run's loop drives.
pub(super) struct Child {
    /// The supervisor of the child.
    pub(super) sup: Supervisor,
    /// The lines forwarded to the child's stdin, as they are written (the host's stdin is
    /// forwarded to the first run only).
    pub(super) written: Option<stdin::Written>,
}

/// Spawn `argv` under the supervisor, as `cfg` says; `expect_session`: the session id its
/// `system/init` must carry (a continuation). `Err` holds the exit code when it cannot start
/// (said on the status line).
pub(super) fn start(
    cfg: &RunConfig,
    argv: &[OsString],
    host: &mut Host,
    expect_session: Option<&ClaudeSessionId>,
) -> Result<Child, i32> {
    let cmd = command(cfg, argv, expect_session.is_some()).ok_or(exit_code::USAGE)?;
    // Only the first run reads the host's stdin; a continuation gets /dev/null.
    let host_stdin = host.stdin.take();
    if expect_session.is_some() {
        // A fresh status line for the continuation (the first run's is finished).
        host.status = Status::new(cfg.status);
    }
    // The dialect the command runs, if it says (Claude Code's otherwise); the first decisive
    // line confirms it or chooses another.
    let dialect = watchdog_host::dialect::of_command(
        &argv.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>(),
    );
    let session = session_config(cfg, host, dialect, expect_session);
    let config = SupervisorConfig {
        policy: Some(session),
        stream_json_input: stdin::has_stream_json_input(argv),
        term_grace: cfg.grace,
        become_subreaper: true,
        claim_orphans: true,
        die_with_host: true,
        pipe_stdin: host_stdin.is_some(),
        ..SupervisorConfig::default()
    };
    let sup = Supervisor::spawn(cmd, config).map_err(|e| {
        host.status.say(&format!("error: {e}"));
        exit_code::INTERNAL
    })?;
    warn_unavailable(sup.unavailable(), host);
    record_start(cfg, argv, &sup, dialect, host);
    let written = match (host_stdin, sup.stdin()) {
        (Some(h), Some(w)) => Some(stdin::forward(h, w)),
        _ => None,
    };
    Ok(Child { sup, written })
}

/// The command `argv` as the child runs it: `cfg`'s environment and working directory, and for
/// a continuation none of the variables that would ask `--resume` for more than one turn.
/// `None` for an empty `argv`.
fn command(
    cfg: &RunConfig,
    argv: &[OsString],
    continuation: bool,
) -> Option<tokio::process::Command> {
    let (program, args) = argv.split_first()?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args);
    if let Some(env) = &cfg.env {
        cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    if let Some(dir) = &cfg.cwd {
        cmd.current_dir(dir);
    }
    if continuation {
        // A continuation starts exactly one new user turn, its own prompt, whatever the
        // inherited environment asks `--resume` to do beside resuming.
        for (var, _) in RESUME_TURN_VARS {
            cmd.env_remove(var);
        }
    }
    Some(cmd)
}

/// The policy's session: `cfg`'s limits, in `dialect` (Claude Code's when the command does not
/// say), expecting `expect_session` (a continuation); tells telemetry the run started.
fn session_config(
    cfg: &RunConfig,
    host: &mut Host,
    dialect: Option<Dialect>,
    expect_session: Option<&ClaudeSessionId>,
) -> SessionConfig {
    let mut session = SessionConfig::default()
        .with_limits(cfg.limits.clone())
        .with_tally(true)
        .with_live_facts(host.telemetry.is_on())
        .with_dialect(dialect.unwrap_or_default());
    host.telemetry
        .run_started(expect_session.map(|id| id.as_str()));
    if let Some(id) = expect_session {
        session = session.with_expected_session(id.clone());
    }
    session
}

/// The capture's `start` record. Its time zero is the policy's: the spawn instant (a later one
/// would record a kill's exit before its own deadline, and a replay would disagree with the
/// live run).
fn record_start(
    cfg: &RunConfig,
    argv: &[OsString],
    sup: &Supervisor,
    dialect: Option<Dialect>,
    host: &mut Host,
) {
    host.recorder.write(
        0,
        Record::Start {
            // The policy's wall-clock anchor: a replay resets the same windows at the same
            // instants.
            wall_ms: Some(sup.started_wall_ms()),
            // What looks like a secret redacted; the rest as it ran (replay reads the flags).
            argv: watchdog_host::redact::args(
                &argv
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect::<Vec<_>>(),
            ),
            env: crate::claude_code::recorded_env(cfg.env.as_deref()),
            dialect,
        },
    );
}

/// Say once per process (a continuation runs under the same host) which guarantees this host
/// took away, and that the run is supervised all the same; the summary lists them per run.
fn warn_unavailable(unavailable: &[Facility], host: &Host) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    if unavailable.is_empty() || WARNED.swap(true, Ordering::Relaxed) {
        return;
    }
    let lost: Vec<String> = unavailable
        .iter()
        .map(|f| format!("{f} ({})", f.lost_guarantee()))
        .collect();
    host.status.say(&format!(
        "warning: this host refused {}; supervising without (summary: unavailable)",
        lost.join("; ")
    ));
}

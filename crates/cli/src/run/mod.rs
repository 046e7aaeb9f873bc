//! `agent-watchdog run` and the `claude-watchdog` drop-in: a presenter on top of the runtime's
//! [`Supervisor`](agent_sdk_watchdog::Supervisor), which spawns the command in its own process
//! group, feeds the core policy and stops the whole process tree.
//!
//! One job a file: `supervise` runs one supervised child in three (`start` spawns it, `drive`
//! is the main loop, `finish` ends it), `live` is what the run shows and keeps as it goes,
//! `interrupts` escalates the user's signals, `stdout` passes its output on and handles write
//! errors, `stdin` forwards the host's input, `host_signals` takes the signals sent to us.
//! Each run ends as one `RunReport`, the invocation as one `Report`
//! (`crate::run_report`), and its observers read it: `closing` (the last lines on stderr, the
//! synthetic `result`), `summary`, recovery, telemetry. Here: the invocation (files opened
//! before the child starts, the runs, recovery, the observers, the exit code, whose rules are
//! in [`crate::exit_code`]).

mod args;
mod closing;
mod config;
mod continuation;
mod drive;
mod finish;
mod hint;
mod host;
mod host_signals;
mod interrupts;
mod live;
mod out_file;
mod record;
mod recovery;
mod start;
mod stderr_dedup;
mod stdin;
mod stdout;
mod summary;
mod supervise;
mod synthetic;
mod vanished;

use std::path::Path;

pub use args::{ReportArgs, RunArgs};
pub use config::Mode;
pub(crate) use config::RunConfig;

use crate::exit_code::{self, RecoveryEnd};
use crate::run_report::{Recovered, RecoveryResult, RecoverySummary, Report, RunReport};
use crate::status::Status;
use crate::verdict::ms;
use host::Host;
use host_signals::UserSignals;
use out_file::SummaryTarget;
use record::Recorder;
use recovery::{Continuation, Plan};
use supervise::supervise;
use watchdog_host::capture::Record;

/// Run `run`; returns the exit code.
pub fn main(args: RunArgs, mode: Mode) -> i32 {
    let limits = args.policy.limits();
    let recovery = recovery::settings(&args.recovery);
    execute_with(
        RunConfig {
            limits,
            grace: args.policy.grace(),
            summary: args.report.summary,
            record: args.report.record,
            emit_result: args.emit_result,
            strict: args.report.strict,
            status: !args.no_status,
            hint: true,
            mode,
            argv: args.command,
            env: None,
            cwd: None,
            quiet_stdout: false,
            command_lines: crate::tree_report::CommandLines::from_switch(
                args.report.no_command_lines,
            ),
        },
        Some(recovery),
    )
}

/// Run a command under the watchdog, without recovery; returns the exit code.
pub(crate) fn execute(cfg: RunConfig) -> i32 {
    execute_with(cfg, None)
}

/// Run a command under the watchdog and, with `recovery` (in [`Mode::Run`]), continue its
/// session once when the recovery policy says so; returns the exit code of the last run.
pub(crate) fn execute_with(cfg: RunConfig, recovery: Option<recovery::Settings>) -> i32 {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agent-watchdog: cannot start the runtime: {e}");
            return exit_code::INTERNAL;
        }
    };
    // Built and flushed outside the runtime: the exporters' HTTP client has its own.
    let telemetry = crate::telemetry::Telemetry::from_env();
    let code = rt.block_on(run(cfg, recovery, &telemetry));
    // The host stdin reader may be blocked in a read; do not wait for it.
    rt.shutdown_background();
    telemetry.shutdown();
    code
}

async fn run(
    cfg: RunConfig,
    recovery: Option<recovery::Settings>,
    telemetry: &crate::telemetry::Telemetry,
) -> i32 {
    let status = Status::new(cfg.status);
    let cfg = with_mcp_rule(cfg, &status);
    if cfg.argv.is_empty() {
        status.say(
            "error: no command given (usage: agent-watchdog run [FLAGS] -- COMMAND [ARGS...])",
        );
        return exit_code::USAGE;
    }
    // Every file is opened before the child starts: a bad path costs nothing.
    let Outputs {
        summary: summary_target,
        recorder,
    } = match open_outputs(&cfg, &status) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    if cfg.hint {
        let hints = [
            hint::missing_flags_hint(&cfg.argv),
            hint::stdin_hint(&cfg.argv, hint::stdin_kind()),
        ];
        for h in hints.iter().flatten() {
            status.say(h);
        }
    }
    let mut host = Host {
        status,
        recorder,
        signals: UserSignals::new(),
        stdout: stdout::StdoutSink::new(cfg.quiet_stdout),
        stdin: stdin::should_pipe(&cfg.argv).then(stdin::spawn_reader),
        // `demo` discards the child's stdout: nobody reads ours for it.
        vanished: vanished::Vanished::start(!cfg.quiet_stdout, cfg.mode == Mode::DropIn),
        telemetry: telemetry.live(),
    };
    let first = match supervise(&cfg, &cfg.argv, &mut host, None).await {
        Ok(f) => f,
        Err(code) => return code,
    };
    let (continuation, recovery, end) = match recovery.filter(|_| cfg.mode == Mode::Run) {
        Some(settings) => match recovery::plan(&settings, &first, &host) {
            Plan::Done(result, why) => (None, Some((result, *why)), RecoveryEnd::NotContinued),
            Plan::Continue(c) => continue_once(&cfg, *c, &first, &mut host).await,
        },
        None => (None, None, RecoveryEnd::NotContinued),
    };
    let report = Report {
        code: exit_code::after_recovery(first.code, end),
        first,
        recovery: recovery.map(|(result, summary)| Recovered { result, summary }),
        continuation,
        end,
    };
    // The observers of the report, each for its own output.
    closing::say(&report, &host.status);
    closing::emit_result(&report, &cfg, &mut host).await;
    if let Some(msg) = closing::ending_message(report.last(), report.code, cfg.mode) {
        host.status.say(&msg);
    }
    let summary = summary_target.is_some().then(|| summary::of(&report));
    telemetry.record(&report);
    if let (Some((path, target)), Some(s)) = (summary_target, summary) {
        let text = format!("{s}\n");
        if let Err(e) = target.write(&text) {
            // The run's own code stands: the summary is a report about it, not its result.
            host.status
                .say(&format!("cannot write the summary {}: {e}", path.display()));
        }
    }
    report.code
}

/// The files an invocation writes, opened before the child starts.
struct Outputs<'c> {
    /// The summary's path, and its file.
    summary: Option<(&'c Path, SummaryTarget)>,
    /// The capture.
    recorder: Recorder,
}

/// The files `cfg` asks for, opened (the summary's) or created (the capture): a path that
/// cannot be is said on `status`, and `Err` holds the exit code.
fn open_outputs<'c>(cfg: &'c RunConfig, status: &Status) -> Result<Outputs<'c>, i32> {
    let summary_target = match &cfg.summary {
        Some(p) => match SummaryTarget::open(p) {
            Ok(t) => Some((p.as_path(), t)),
            Err(e) => {
                status.say(&format!(
                    "error: cannot write the summary {}: {e}",
                    p.display()
                ));
                return Err(exit_code::INTERNAL);
            }
        },
        None => None,
    };
    let recorder = match &cfg.record {
        Some(p) => match Recorder::create(p) {
            Ok(r) => r,
            Err(e) => {
                status.say(&format!(
                    "error: cannot create the capture {}: {e}",
                    p.display()
                ));
                return Err(exit_code::INTERNAL);
            }
        },
        None => Recorder::none(),
    };
    Ok(Outputs {
        summary: summary_target,
        recorder,
    })
}

/// Carry out the continuation recovery planned: wait for the reset first (the user's signal
/// aborts it), mark the boundary in the capture, run the continuation through the same
/// supervised path, and conclude. Returns the continued run, what recovery did (and the
/// summary's `recovery` object), and what it means for the exit code.
async fn continue_once(
    cfg: &RunConfig,
    c: Continuation,
    first: &RunReport,
    host: &mut Host,
) -> (
    Option<RunReport>,
    Option<(RecoveryResult, RecoverySummary)>,
    RecoveryEnd,
) {
    if let Some(until) = c.wait_until {
        let sid = c.expected.as_str().to_owned();
        if let Err(sig) = recovery::wait_for(until, &sid, cfg.status, host).await {
            let done = c.aborted(sig, host);
            return (None, Some(done), RecoveryEnd::Aborted(sig.exit_code()));
        }
    }
    let boundary = c.boundary(host);
    host.recorder
        .write(ms(first.facts.duration), Record::Boundary(boundary));
    match supervise(cfg, &c.argv, host, Some(&c.expected)).await {
        Err(code) => (None, Some(c.could_not_start()), RecoveryEnd::Aborted(code)),
        Ok(cont) => {
            let done = c.conclude(&cont, host);
            let end = RecoveryEnd::Continued {
                code: cont.code,
                other_session: cont.ours.session_mismatch.is_some(),
            };
            (Some(cont), Some(done), end)
        }
    }
}

/// `cfg` with the MCP rule applied for its child (its environment, command line and working
/// directory); says once on `status` what it changed about startup and what it could not read.
fn with_mcp_rule(mut cfg: RunConfig, status: &Status) -> RunConfig {
    let cwd = cfg
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    let child = crate::claude_code::invocation(&cfg.argv, cfg.env.as_deref(), &cwd)
        .mcp(crate::claude_code::read_config);
    for p in &child.problems {
        status.say(&format!(
            "warning: {p}; its servers get the default MCP limits"
        ));
    }
    let (limits, note) = cfg.limits.clone().with_mcp_setup(&child);
    if let Some(n) = note {
        status.say(&n);
    }
    cfg.limits = limits;
    cfg
}

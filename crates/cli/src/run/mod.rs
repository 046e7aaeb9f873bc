//! `agent-watchdog run` and the `claude-watchdog` drop-in: a presenter on top of the runtime's
//! [`Supervisor`](agent_sdk_watchdog::Supervisor), which spawns the command in its own process
//! group, feeds the core policy and stops the whole process tree.
//!
//! One job a file: `live` runs one supervised child (the main loop), `stdout` passes its
//! output on and handles write errors, `stdin` forwards the host's input, `host_signals`
//! takes the signals sent to us. Here: the invocation (files opened before the child starts,
//! the runs, recovery, the synthetic `result`, the summary, the final message and the exit
//! code, whose rules are in [`crate::exit_code`]).

mod args;
mod config;
mod continuation;
mod finished;
mod hint;
mod host;
mod host_signals;
mod live;
mod out_file;
mod record;
mod recovery;
mod stderr_dedup;
mod stdin;
mod stdout;
mod summary;
mod supervise;
mod synthetic;
mod vanished;

use serde_json::{json, Value};

pub use args::{ReportArgs, RunArgs};
pub use config::Mode;
pub(crate) use config::RunConfig;

use crate::exit_code::{self, RecoveryEnd};
use crate::run_report::RecoveryResult;
use crate::status::Status;
use crate::verdict::{kill_sentence, ms};
use config::{emits_result, program_name};
use finished::Finished;
use host::{Drained, Host};
use host_signals::UserSignals;
use out_file::SummaryTarget;
use record::Recorder;
use recovery::{Continuation, Plan};
use stdout::OUTPUT_DRAIN;
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
    let summary_target = match &cfg.summary {
        Some(p) => match SummaryTarget::open(p) {
            Ok(t) => Some((p, t)),
            Err(e) => {
                status.say(&format!(
                    "error: cannot write the summary {}: {e}",
                    p.display()
                ));
                return exit_code::INTERNAL;
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
                return exit_code::INTERNAL;
            }
        },
        None => Recorder::none(),
    };
    if cfg.hint {
        if let Some(h) = hint::missing_flags_hint(&cfg.argv) {
            status.say(&h);
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
    let (last, recovery, end) = match recovery.filter(|_| cfg.mode == Mode::Run) {
        Some(settings) => match recovery::plan(&settings, &first, &host) {
            Plan::Done(result, json) => (None, Some((result, json)), RecoveryEnd::NotContinued),
            Plan::Continue(c) => continue_once(&cfg, *c, &first, &mut host).await,
        },
        None => (None, None, RecoveryEnd::NotContinued),
    };
    let (recovery_result, recovery_json) = recovery.unzip();
    let code = exit_code::after_recovery(first.code, end);
    let final_run = last.as_ref().unwrap_or(&first);
    // Subagent failures are said even when the session succeeded (the exit code is kept).
    for run in std::iter::once(&first).chain(last.as_ref()) {
        for line in run.record.tally.subagents().report_lines() {
            host.status.say(&line);
        }
    }
    if final_run.ours.session_mismatch.is_some() {
        // The continuation was stopped: the work was not continued.
        host.status.say(
            "recovery: exiting 1: the continuation was stopped, the session was not continued",
        );
    }

    // The synthetic result goes after everything the child printed, on a line of its own.
    if let (true, Some(k)) = (emits_result(&cfg), final_run.stopped_by().kill()) {
        let what = program_name(&final_run.facts.argv);
        let line = synthetic::result_line(
            k,
            &kill_sentence(k, &what),
            final_run.record.session_id.as_ref(),
            ms(final_run.facts.duration),
            final_run.record.num_turns(),
        );
        let delivered = host.stdout.push_own_line(&line.to_string()) && {
            host.stdout.tighten(std::time::Instant::now(), OUTPUT_DRAIN);
            matches!(host.drain_stdout().await, Drained::Done)
        };
        if !delivered {
            host.stdout.abandon();
            host.status
                .say("our stdout cannot take the synthetic result: it is lost");
        }
    }
    if let Some(msg) = final_run.ending_message(code, cfg.mode) {
        host.status.say(&msg);
    }
    let summary = summary_target.is_some().then(|| {
        let mut summary = first.summary(code, recovery_json);
        // Which run each top-level fact belongs to: the first's facts, and the exit code of
        // the last run (none when recovery ended the chain itself: an aborted wait, a
        // continuation that could not start).
        summary["run"] = json!(0);
        summary["exit_code_from_run"] = match end {
            RecoveryEnd::NotContinued => json!(0),
            RecoveryEnd::Continued { .. } => json!(1),
            RecoveryEnd::Aborted(_) => Value::Null,
        };
        if let Some(cont) = &last {
            // Which run each fact belongs to: each run's own summary, with its own code.
            let runs: Vec<Value> = [&first, cont]
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let mut v = r.summary(r.code, None);
                    v["run"] = json!(i);
                    v
                })
                .collect();
            summary["runs"] = json!(runs);
        }
        summary
    });
    telemetry.record_run(&first.report(code, recovery_result.as_ref()));
    // A continuation is a run of its own (its kill, its outcome), under the same session id.
    if let Some(cont) = &last {
        telemetry.record_run(&cont.report(cont.code, None));
    }
    if let (Some((path, target)), Some(s)) = (summary_target, summary) {
        let text = format!("{s}\n");
        if let Err(e) = target.write(&text) {
            // The run's own code stands: the summary is a report about it, not its result.
            host.status
                .say(&format!("cannot write the summary {}: {e}", path.display()));
        }
    }
    code
}

/// Carry out the continuation recovery planned: wait for the reset first (the user's signal
/// aborts it), mark the boundary in the capture, run the continuation through the same
/// supervised path, and conclude. Returns the continued run, what recovery did (and the
/// summary's `recovery` object), and what it means for the exit code.
async fn continue_once(
    cfg: &RunConfig,
    c: Continuation,
    first: &Finished,
    host: &mut Host,
) -> (
    Option<Finished>,
    Option<(RecoveryResult, Value)>,
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

//! `claude-watchdog`: a drop-in for the `claude` executable that the Agent SDKs spawn
//! (`pathToClaudeCodeExecutable` in TypeScript, `cli_path` in Python).
//!
//! It takes exactly `claude`'s arguments, runs the real `claude` (`AGENT_WATCHDOG_CLAUDE`, else
//! the first `claude` on `PATH` that is not itself) under the policy read from the
//! `AGENT_WATCHDOG_*` environment variables, and passes stdin, stdout and stderr through. On a
//! kill it writes one synthetic final `result` line (`terminal_reason: watchdog_<kind>`) and
//! exits 1, like the real CLI after an error result; otherwise it exits with the child's code.
//! `AGENT_WATCHDOG_RECORD` and `AGENT_WATCHDOG_SUMMARY` name a capture and a summary file.

use std::ffi::OsString;

use clap::Parser;

use crate::exit_code;
use crate::policy_args::PolicyArgs;
use crate::run::ReportArgs;
use crate::run::{execute, Mode, RunConfig};

#[derive(Debug, Parser)]
#[command(name = "claude-watchdog", no_binary_name = true)]
struct EnvPolicy {
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    report: ReportArgs,
}

/// Set in the environment of the `claude` a drop-in runs: the drop-in's pid.
pub const DROP_IN_PID_VAR: &str = "AGENT_WATCHDOG_DROP_IN_PID";

/// Whether this drop-in was started by another one as its `claude` (a wrapper named `claude`
/// on `PATH` that runs `claude-watchdog`): its parent, or its parent's parent (a wrapper
/// script that did not `exec`), is the drop-in that set [`DROP_IN_PID_VAR`]. A drop-in run by
/// a tool of a supervised `claude` (farther down the tree) is not nested in this sense.
fn started_by_a_drop_in() -> bool {
    let Some(outer) = std::env::var(DROP_IN_PID_VAR)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
    else {
        return false;
    };
    let parent = crate::os::parent_pid();
    if parent == Some(outer) {
        return true;
    }
    parent.and_then(crate::os::parent_of) == Some(outer)
}

/// The longest grace the drop-in gives: an SDK host's `close()` sends SIGKILL 5 s after its
/// SIGTERM (both SDKs), and the whole ladder must fit before it: up to 2 s for the tree to end
/// on SIGTERM, then SIGKILL to all of it, the reaping, the summary and the capture, with 3 s
/// to spare on a loaded machine. It bounds every ladder of the drop-in (a host's signal, a
/// policy kill, the leftovers of a claude that exited): the host's SIGTERM can come during
/// any of them.
pub(crate) const HOST_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Run the drop-in with `claude`'s arguments (without the program name); returns the exit code.
pub fn main(args: Vec<OsString>) -> i32 {
    if args.first().is_some_and(|a| a == crate::os::GUARDIAN_ARG) {
        return crate::os::serve_guardian(&args[1..]);
    }
    crate::policy_args::forget_empty_env_vars();
    if started_by_a_drop_in() {
        eprintln!(
            "claude-watchdog: the claude it found runs claude-watchdog again (a wrapper named \
             claude on PATH?); set AGENT_WATCHDOG_CLAUDE to the real claude"
        );
        return exit_code::INTERNAL;
    }
    // Single-threaded still: no other thread reads the environment.
    std::env::set_var(DROP_IN_PID_VAR, std::process::id().to_string());
    let EnvPolicy { policy, report } = match EnvPolicy::try_parse_from(Vec::<OsString>::new()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "claude-watchdog: {}",
                crate::policy_args::env_error_text(&e)
            );
            return exit_code::USAGE;
        }
    };
    let limits = policy.limits();
    let claude = match crate::find_claude::for_drop_in() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("claude-watchdog: {e}");
            return exit_code::INTERNAL;
        }
    };
    let mut argv = vec![claude.into_os_string()];
    argv.extend(args);
    // Whatever kills us (SIGKILL included), the tree must not outlive us.
    let guardian = crate::os::Guardian::start();
    let code = execute(RunConfig {
        limits,
        grace: policy.grace().min(HOST_GRACE),
        summary: report.summary,
        record: report.record,
        emit_result: true,
        strict: report.strict,
        status: false,
        hint: false,
        mode: Mode::DropIn,
        argv,
        env: None,
        cwd: None,
        quiet_stdout: false,
        command_lines: crate::tree_report::CommandLines::from_switch(report.no_command_lines),
    });
    if let Some(g) = guardian {
        g.done();
    }
    code
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use crate::options::{Reader, OPTIONS};

    use super::EnvPolicy;

    /// The drop-in reads exactly the variables the option table gives it (with a flag; the
    /// real `claude`'s variable is read by `find_claude`).
    #[test]
    fn the_drop_in_reads_the_tables_variables() {
        let cmd = <EnvPolicy as clap::CommandFactory>::command();
        let read: BTreeSet<&str> = cmd
            .get_arguments()
            .filter_map(|a| a.get_env())
            .map(|e| e.to_str().unwrap())
            .collect();
        let table: BTreeSet<&str> = OPTIONS
            .iter()
            .filter(|o| o.is_read_by(Reader::DropIn) && o.flag.is_some())
            .map(|o| o.env)
            .collect();
        assert_eq!(read, table);
    }
}

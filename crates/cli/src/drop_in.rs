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
use std::path::PathBuf;

use clap::Parser;

use crate::exit_code;
use crate::policy_args::PolicyArgs;
use crate::run::{execute, Mode, RunConfig};

#[derive(Debug, Parser)]
#[command(name = "claude-watchdog", no_binary_name = true)]
struct EnvPolicy {
    #[command(flatten)]
    policy: PolicyArgs,
}

/// Run the drop-in with `claude`'s arguments (without the program name); returns the exit code.
pub fn main(args: Vec<OsString>) -> i32 {
    let policy = match EnvPolicy::try_parse_from(Vec::<OsString>::new()) {
        Ok(p) => p.policy,
        Err(e) => {
            eprintln!(
                "claude-watchdog: invalid AGENT_WATCHDOG_* environment: {}",
                e.to_string().trim()
            );
            return exit_code::USAGE;
        }
    };
    let limits = match policy.limits() {
        Ok(l) => l,
        Err(e) => return crate::replay_cmd::policy_error(&e),
    };
    let claude = match crate::find_claude::for_drop_in() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("claude-watchdog: {e}");
            return exit_code::INTERNAL;
        }
    };
    let env_path = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut argv = vec![claude.into_os_string()];
    argv.extend(args);
    execute(RunConfig {
        limits,
        grace: policy.grace(),
        summary: env_path("AGENT_WATCHDOG_SUMMARY"),
        record: env_path("AGENT_WATCHDOG_RECORD"),
        emit_result: true,
        status: false,
        hint: false,
        mode: Mode::DropIn,
        argv,
        env: None,
        cwd: None,
        quiet_stdout: false,
    })
}

//! The `agent-watchdog` command.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use agent_watchdog::cli::{Cli, Command};
use agent_watchdog::exit_code;
use clap::Parser;

fn main() -> ExitCode {
    // Before any thread: an empty AGENT_WATCHDOG_* variable is an unset one, everywhere.
    agent_watchdog::forget_empty_env_vars();
    let cli = match Cli::try_parse() {
        // A hook must never fail the session that runs it (exit 2 blocks it in Claude Code):
        // a bad command line of `hook` is one line and exit 0, like every other hook error.
        Err(e) if e.use_stderr() && is_hook_command() => {
            eprintln!(
                "{}",
                agent_watchdog::hook::usage_failure_line(&e.render().to_string())
            );
            return ExitCode::SUCCESS;
        }
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // `--help` and `--version` print to stdout and exit 0.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprint!("{}", exit_code::usage_error_text(&e.render().to_string()));
            return ExitCode::from(exit_code::USAGE as u8);
        }
    };
    let code = match cli.command {
        Command::Run(args) => agent_watchdog::run::main(args, agent_watchdog::run::Mode::Run),
        Command::Replay(args) => agent_watchdog::replay::main(args),
        Command::Audit(args) => audit(&args),
        Command::Demo(args) => agent_watchdog::demo::main(args),
        Command::Hook(args) => hook(args),
        Command::Claim(args) => agent_watchdog::claim::main(args),
        Command::Timeouts(args) => agent_watchdog::timeouts::main(args),
        Command::PluginDir => agent_watchdog::plugin_dir::main(),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(exit_code::INTERNAL as u8))
}

fn is_hook_command() -> bool {
    std::env::args_os().nth(1).is_some_and(|a| a == "hook")
}

/// `hook`, whatever happens inside it: a panic is one stderr line and exit 0.
fn hook(args: agent_watchdog::hook::HookArgs) -> i32 {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_owned());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let one_line = msg.replace('\n', " ");
        eprintln!("agent-watchdog hook: internal error{at}: {one_line}; doing nothing");
    }));
    // The panic hook said it; the session goes on.
    agent_watchdog::hook::guarded(|| agent_watchdog::hook::main(args)).unwrap_or(0)
}

fn audit(args: &agent_watchdog::audit::AuditArgs) -> i32 {
    use agent_watchdog::audit::{run_audit, AuditError};
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    match run_audit(args, &mut out, &mut err) {
        Ok(code) => code,
        Err(AuditError::Config(e)) => agent_watchdog::exit_code::config_error(&e),
        // `audit | head`: the reader went away; end quietly, as `replay` does.
        Err(AuditError::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            exit_code::OUTPUT_CLOSED
        }
        Err(e) => {
            eprintln!("agent-watchdog: audit: {e}");
            exit_code::INTERNAL
        }
    }
}

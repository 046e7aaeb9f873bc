//! The `agent-watchdog` command.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use agent_watchdog::cli::{Cli, Command};
use agent_watchdog::exit_code;
use clap::Parser;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
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
        Command::Hook(args) => agent_watchdog::hook::main(args),
        Command::PluginDir => agent_watchdog::plugin_dir::main(),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(exit_code::INTERNAL as u8))
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

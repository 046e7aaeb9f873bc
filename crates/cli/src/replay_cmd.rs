//! The `replay` subcommand: read a capture, replay it, print the timeline or JSON.

use std::fs::File;
use std::io::{self, BufReader, Write};

use crate::cli::ReplayArgs;
use crate::exit_code;
use crate::replay::{read_capture, replay, write_human};

/// Print a policy error the way clap prints a bad flag, and return the usage exit code.
pub fn policy_error(e: &watchdog_core::ConfigError) -> i32 {
    eprintln!(
        "agent-watchdog: error: invalid value '{}' for '--{}': must be {}",
        e.value,
        e.option.replace('_', "-"),
        e.allowed
    );
    exit_code::USAGE
}

/// Run `replay`; returns the exit code (0 after a verdict, 1 if the capture cannot be read,
/// 2 for a bad flag).
pub fn main(args: ReplayArgs) -> i32 {
    let limits = match args.policy.limits() {
        Ok(l) => l,
        Err(e) => return policy_error(&e),
    };
    let name = args.file.display().to_string();
    let cap = if name == "-" {
        read_capture(io::stdin().lock())
    } else {
        match File::open(&args.file) {
            Ok(f) => read_capture(BufReader::new(f)),
            Err(e) => {
                eprintln!("agent-watchdog: cannot open capture {name}: {e}");
                return exit_code::INTERNAL;
            }
        }
    };
    let cap = match cap {
        Ok(c) => c,
        Err(e) => {
            eprintln!("agent-watchdog: cannot read capture {name}: {e}");
            return exit_code::INTERNAL;
        }
    };
    for (line, why) in &cap.skipped {
        eprintln!("agent-watchdog: {name}:{line}: skipped: {why}");
    }
    // The MCP rule, from the environment the capture's `start` record kept (or the defaults).
    let limits = crate::mcp_limits::for_capture(limits, &cap.entries);
    let verdict = replay(&cap.entries, limits.clone());
    let mut out = io::stdout().lock();
    let res = if args.json {
        writeln!(out, "{}", verdict.to_json())
    } else {
        write_human(&verdict, &name, &limits, &mut out)
    };
    match res.and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("agent-watchdog: cannot write the report: {e}");
            exit_code::INTERNAL
        }
    }
}

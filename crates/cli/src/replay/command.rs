//! The `replay` command: its flags in, the timeline or JSON out, and the exit code.

use std::io::{self, Write};

use super::args::ReplayArgs;
use super::verdicts::{replay_reader, write_human, Replayed};
use crate::exit_code;

/// Run `replay`; returns the exit code: 0 after a verdict; 1 if the capture cannot be read or
/// holds no record at all; 2 for a bad flag; [`exit_code::OUTPUT_CLOSED`] when the reader of
/// our stdout went away (quietly).
pub fn main(args: ReplayArgs) -> i32 {
    let limits = args.policy.limits();
    let name = args.file.display().to_string();
    let replayed = if name == "-" {
        with_mcp_rule(io::BufReader::new(io::stdin().lock()), &limits)
    } else {
        match watchdog_audit::files::open(&args.file) {
            Ok(f) => with_mcp_rule(io::BufReader::new(f), &limits),
            Err(e) => {
                eprintln!("agent-watchdog: cannot open capture {name}: {e}");
                return exit_code::INTERNAL;
            }
        }
    };
    let limits = match &replayed {
        Ok((_, l)) => l.clone(),
        Err(_) => limits,
    };
    let replayed = replayed.map(|(r, _)| r);
    let r = match replayed {
        Ok(r) => r,
        Err(e) => {
            eprintln!("agent-watchdog: cannot read capture {name}: {e}");
            return exit_code::INTERNAL;
        }
    };
    if r.records == 0 {
        let why = match r.skipped_count {
            0 => "it is empty".to_string(),
            n => format!(
                "none of its {n} lines is a capture record (line {}: {})",
                r.skipped[0].0, r.skipped[0].1
            ),
        };
        eprintln!("agent-watchdog: {name} is not a capture: {why}");
        return exit_code::INTERNAL;
    }
    warn(&r, &name);
    let mut out = io::stdout().lock();
    let res = if args.json {
        writeln!(out, "{}", r.to_json())
    } else {
        write_human(&r, &name, &limits, &mut out)
    };
    match res.and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) => exit_code::output_error(&e, "the report"),
    }
}

/// Say on stderr what could not be read and which times were clamped.
fn warn(r: &Replayed, name: &str) {
    for (line, why) in &r.skipped {
        eprintln!("agent-watchdog: {name}:{line}: skipped: {why}");
    }
    let unlisted = r.skipped_count - r.skipped.len() as u64;
    if unlisted > 0 {
        eprintln!("agent-watchdog: {name}: {unlisted} more lines skipped");
    }
    if let Some(f) = r.time_faults {
        let more = match f.count {
            1 => String::new(),
            n => format!(" ({} more lines like it)", n - 1),
        };
        eprintln!(
            "agent-watchdog: {name}:{}: t_ms {}: taken as the previous time, {} ms{more}",
            f.first_line,
            f.first.as_str(),
            f.taken_ms
        );
    }
}

/// Replay `reader` under `limits` with the MCP rule applied from the capture's `start` record
/// (its first line, when the capture has one; else Claude Code's defaults). Returns the replay
/// and the limits it used. The first line is read ahead (up to the 64 MiB line cap) and
/// handed back to the replay unchanged.
fn with_mcp_rule(
    mut reader: impl io::BufRead,
    limits: &watchdog_core::Limits,
) -> io::Result<(Replayed, watchdog_core::Limits)> {
    use std::io::{BufRead, Read};
    let mut first = Vec::new();
    (&mut reader)
        .take(watchdog_core::config::MAX_LINE as u64)
        .read_until(b'\n', &mut first)?;
    let start = watchdog_host::capture::Entry::parse(&first)
        .ok()
        .flatten()
        .filter(|e| matches!(e.record, watchdog_host::capture::Record::Start { .. }));
    let limits = crate::claude_code::for_capture(limits.clone(), start.as_slice());
    let replayed = replay_reader(io::Cursor::new(first).chain(reader), limits.clone())?;
    Ok((replayed, limits))
}

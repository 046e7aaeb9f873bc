//! Exit codes of `agent-watchdog` (and of `claude-watchdog`, which exits 1 after a kill like
//! the real CLI after an error result).
//!
//! | code | meaning |
//! |---|---|
//! | the child's own | the child ended by itself after a `result` (success or error result) |
//! | 124 | killed by the watchdog: `idle`, `no_progress` or `linger` |
//! | 125 | killed by the watchdog: `startup` (no output at all) |
//! | 137 | killed by the watchdog: `ceiling` |
//! | 3 | the child ended without a `result` (`no_result`) or exited mid-task (`incomplete`) |
//! | 2 | usage error (bad flag or value) |
//! | 1 | internal error (the command could not be spawned, a file could not be written, …) |
//! | 130 / 143 | we were interrupted (SIGINT / SIGTERM), forwarded it, and the child ended without a `result` |
//! | 141 | `replay` / `audit`: the reader of our stdout went away (`… \| head`); nothing is said, as a shell reports SIGPIPE |

use watchdog_core::{KillKind, Outcome};

/// Killed after going quiet: `idle`, `no_progress` or `linger`.
pub const KILLED_STALLED: i32 = 124;
/// Killed because the child printed nothing at all: `startup`.
pub const KILLED_STARTUP: i32 = 125;
/// Killed at the total-age ceiling: `ceiling`.
pub const KILLED_CEILING: i32 = 137;
/// The child ended without a `result` (`no_result`) or mid-task (`incomplete`).
pub const NO_RESULT: i32 = 3;
/// Usage error: a bad flag or value.
pub const USAGE: i32 = 2;
/// Internal error.
pub const INTERNAL: i32 = 1;
/// Interrupted by SIGINT (forwarded to the child, which ended without a `result`).
pub const INTERRUPTED: i32 = 130;
/// Terminated by SIGTERM (forwarded to the child, which ended without a `result`).
pub const TERMINATED: i32 = 143;

/// `replay` and `audit`: the reader of stdout went away (EPIPE); reported quietly, with the
/// code a shell gives a process that SIGPIPE ended.
pub const OUTPUT_CLOSED: i32 = 141;

/// The exit code after a failed write of `what` to stdout: a closed reader ends quietly with
/// [`OUTPUT_CLOSED`]; any other error is said once, with [`INTERNAL`].
pub fn output_error(e: &std::io::Error, what: &str) -> i32 {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        OUTPUT_CLOSED
    } else {
        eprintln!("agent-watchdog: cannot write {what}: {e}");
        INTERNAL
    }
}

/// The exit code for a watchdog kill of this kind.
pub fn for_kill(kind: KillKind) -> i32 {
    match kind {
        KillKind::Idle | KillKind::NoProgress | KillKind::Linger => KILLED_STALLED,
        KillKind::Startup => KILLED_STARTUP,
        KillKind::Ceiling => KILLED_CEILING,
    }
}

/// The exit code of a run that ended with `outcome`, the child having exited with `child_code`
/// (its exit code, or `128 + signal` when a signal ended it; `None` if unknown).
pub fn for_outcome(outcome: &Outcome, child_code: Option<i32>) -> i32 {
    match outcome {
        Outcome::Killed { kind } => for_kill(*kind),
        Outcome::Success | Outcome::ErrorResult { .. } => child_code.unwrap_or(INTERNAL),
        Outcome::NoResult | Outcome::Incomplete => NO_RESULT,
    }
}

/// The exit-code table, for `--help`.
pub const HELP: &str = "\
Exit codes:
  <child's code>  the command ended by itself after a `result` line
  124             killed: idle, no_progress or linger
  125             killed: startup (no output at all)
  137             killed: ceiling (total age)
  3               ended without a `result` (no_result) or mid-task (incomplete)
  2               usage error (bad flag or value)
  1               internal error (spawn failed, file not writable, ...)
  130 / 143       interrupted by SIGINT / SIGTERM, child ended without a `result`";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kills_map_to_their_codes() {
        assert_eq!(for_kill(KillKind::Idle), 124);
        assert_eq!(for_kill(KillKind::NoProgress), 124);
        assert_eq!(for_kill(KillKind::Linger), 124);
        assert_eq!(for_kill(KillKind::Startup), 125);
        assert_eq!(for_kill(KillKind::Ceiling), 137);
    }

    #[test]
    fn outcomes_map_to_their_codes() {
        assert_eq!(for_outcome(&Outcome::Success, Some(0)), 0);
        let err = Outcome::ErrorResult {
            subtype: None,
            terminal_reason: None,
            stop_reason: None,
            api_error: None,
            api_error_status: None,
        };
        assert_eq!(for_outcome(&err, Some(1)), 1);
        assert_eq!(for_outcome(&Outcome::NoResult, Some(0)), 3);
        assert_eq!(for_outcome(&Outcome::Incomplete, Some(0)), 3);
        assert_eq!(
            for_outcome(
                &Outcome::Killed {
                    kind: KillKind::Startup
                },
                Some(143)
            ),
            125
        );
    }
}

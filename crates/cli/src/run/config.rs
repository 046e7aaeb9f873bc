//! What a run is given: how it presents itself ([`Mode`]) and everything it needs
//! ([`RunConfig`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// How the run presents itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `agent-watchdog run`.
    Run,
    /// `claude-watchdog`: behaves like `claude`; always writes the synthetic `result` on a kill.
    DropIn,
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The policy.
    pub limits: watchdog_core::Limits,
    /// Time between SIGTERM and SIGKILL (also after a forwarded signal of the user's).
    pub grace: Duration,
    /// Where to write the summary (`-` for stderr).
    pub summary: Option<PathBuf>,
    /// Where to record the capture.
    pub record: Option<PathBuf>,
    /// Write a synthetic `result` on a kill and exit 1.
    pub emit_result: bool,
    /// Every ending without a usable `result` exits 3 (see [`crate::exit_code`]).
    pub strict: bool,
    /// Show the live status line on a terminal.
    pub status: bool,
    /// Print the hints: the missing flags of a `claude`, `codex` or `opencode` command, a
    /// pipe for stdin that `codex` or `opencode` would wait on.
    pub hint: bool,
    /// Run or drop-in.
    pub mode: Mode,
    /// The command line.
    pub argv: Vec<OsString>,
    /// The child's whole environment (`None`: inherit ours).
    pub env: Option<Vec<(OsString, OsString)>>,
    /// The child's working directory (`None`: ours).
    pub cwd: Option<PathBuf>,
    /// Discard the child's stdout instead of passing it through (for `demo`).
    pub quiet_stdout: bool,
    /// What the run's records may say of a command line.
    pub command_lines: crate::tree_report::CommandLines,
}

/// Whether the run writes the synthetic `result` on a kill.
pub(crate) fn emits_result(cfg: &RunConfig) -> bool {
    cfg.emit_result || cfg.mode == Mode::DropIn
}

/// The program's file name, for messages (`claude`, not its path).
pub(crate) fn program_name(argv: &[OsString]) -> String {
    let program = argv.first().cloned().unwrap_or_default();
    std::path::Path::new(&program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.to_string_lossy().into_owned())
}

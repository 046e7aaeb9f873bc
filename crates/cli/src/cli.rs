//! The command line: the commands `main` dispatches. Each command's folder owns its flags
//! (`run/args.rs`, `replay/args.rs`, `audit/args.rs`, `demo/args.rs`, `hook/args.rs`); this
//! file only assembles them, and no module of the crate imports it.

use clap::{Parser, Subcommand};

use crate::audit::AuditArgs;
use crate::claim::ClaimArgs;
use crate::demo::DemoArgs;
use crate::hook::HookArgs;
use crate::replay::ReplayArgs;
use crate::run::RunArgs;
use crate::timeouts::TimeoutsArgs;

/// Make every Claude Code run end, for a reason you can read.
#[derive(Debug, Parser)]
#[command(
    name = "agent-watchdog",
    version,
    long_version = long_version(),
    after_help = crate::exit_code::HELP
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The cargo features this build has, as `--version` lists them (a documented feature a build
/// lacks is visible before it is missed).
pub const FEATURES: &[(&str, bool)] = &[
    ("demo", cfg!(feature = "demo")),
    ("ledger", cfg!(feature = "ledger")),
    ("telemetry", cfg!(feature = "telemetry")),
    ("telemetry-grpc", cfg!(feature = "telemetry-grpc")),
];

/// `--version`: the version, then the features compiled in and those left out.
fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let pick = |on: bool| -> Vec<&str> {
            FEATURES
                .iter()
                .filter(|(_, f)| *f == on)
                .map(|(name, _)| *name)
                .collect()
        };
        let (with, without) = (pick(true), pick(false));
        let mut v = format!(
            "{}\nfeatures: {}",
            env!("CARGO_PKG_VERSION"),
            with.join(", ")
        );
        if !without.is_empty() {
            v.push_str(&format!(" (not in this build: {})", without.join(", ")));
        }
        v
    })
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command (usually `claude -p … --output-format stream-json --verbose`) under the
    /// watchdog: pass its output through untouched, stop it when it hangs, say why.
    #[command(after_help = crate::exit_code::HELP)]
    Run(RunArgs),
    /// Replay a capture (see `run --record`) and show what the watchdog would have done.
    Replay(ReplayArgs),
    /// Audit past sessions (Claude Code transcripts or captures): how they ended, and what a
    /// policy would have done to them.
    Audit(AuditArgs),
    /// Show the watchdog at work: three short sessions of a real `claude` against a local mock
    /// of the Messages API (healthy, silent after a tool result, pings only).
    Demo(DemoArgs),
    /// The Claude Code command hook of the subagent plugin (`plugin/`): JSON on stdin, a
    /// decision on stdout. Continues a subagent cut off by the output token limit once.
    Hook(HookArgs),
    /// Claim a session's continuation marker (the ledger `run` uses), for a host that
    /// continues the session itself: one JSON line says whether this caller may.
    Claim(ClaimArgs),
    /// Print the Temporal activity timeouts a policy implies (`heartbeat_timeout`,
    /// `start_to_close_timeout`), as one JSON line: the helpers' one rule.
    Timeouts(TimeoutsArgs),
    /// Print the directory of the subagent plugin this installation carries (the pip and npm
    /// packages), for `claude --plugin-dir`.
    PluginDir,
}

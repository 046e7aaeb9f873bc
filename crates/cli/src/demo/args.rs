//! The flags of `demo` (parsed in every build, so a build without the demo can say so).

use std::path::PathBuf;

use clap::Args;

/// Flags of `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The `claude` binary to use [default: `CLAUDE_BIN`, the project's `.tools/claude`, then
    /// `PATH`].
    #[arg(long, value_name = "PATH", env = "CLAUDE_BIN")]
    pub claude: Option<PathBuf>,
}

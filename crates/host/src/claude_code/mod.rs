//! How Claude Code was started, as a host reads it (Claude Code 2.1.332): the command line,
//! the variables that matter and the working directory, and what follows from them. The MCP
//! rule itself is the policy's ([`watchdog_core::mcp`]); this module reads the
//! invocation it applies to.
//!
//! - [`Invocation`]: how a child was started (`{argv, env, cwd}`, typed), and what follows
//!   from it: its MCP setup ([`Invocation::mcp`]), whether it reads stream-json on stdin
//!   ([`Invocation::reads_stream_json_input`]), which session it runs ([`Invocation::session`]).
//! - [`session`]: the flags that choose a session and which one a command line runs.
//! - [`PLUGIN_HOOK_TIMEOUT`]: how long Claude Code lets the subagent plugin's hook run.
//!
//! Nothing here opens a file: [`Invocation::mcp`] is handed the reader of the config files it
//! names, so a host decides what may be read (the CLI reads regular files only).
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::time::Duration;
//! use watchdog_host::claude_code::{session::Session, Invocation};
//!
//! let env = BTreeMap::from([("MCP_TOOL_TIMEOUT".to_owned(), "45000".to_owned())]);
//! let config = r#"{"mcpServers":{"web":{"type":"http","url":"http://x"}}}"#;
//! let inv = Invocation::new(
//!     ["claude", "-p", "go", "--resume", "s-1", "--mcp-config", config],
//!     |k| env.get(k).cloned(),
//!     "/work",
//! );
//! let mcp = inv.mcp(|path| Err(format!("not read: {}", path.display())));
//! // The hard limit (45 s) comes before the HTTP server's idle limit (300 s).
//! assert_eq!(mcp.give_up_for("web"), Some(Duration::from_secs(45)));
//! assert_eq!(inv.session(), Session::Resume("s-1"));
//! assert!(!inv.reads_stream_json_input());
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod session;

use session::Session;
use watchdog_core::mcp::{McpSetup, VARS};

/// The timeout (30 s) the subagent plugin's command hooks declare (`plugin/hooks/hooks.json`):
/// Claude Code cancels a hook that runs longer, so the hook's work is bounded to fit in it.
pub const PLUGIN_HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// How Claude Code was started: its command line (the program first), the variables of its
/// environment that matter ([`VARS`]: only these are kept, and recorded in a
/// capture's `start` record, never the rest of the environment), and its working directory (relative config paths
/// are read from there).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    argv: Vec<String>,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
}

/// The [`VARS`] that `env` (a variable's value, if set) has.
pub fn relevant_env(env: impl Fn(&str) -> Option<String>) -> BTreeMap<String, String> {
    VARS.iter()
        .filter_map(|k| Some(((*k).to_owned(), env(k)?)))
        .collect()
}

impl Invocation {
    /// `argv` (the program first), the environment as `env` answers it (only [`VARS`] are asked
    /// for and kept) and the working directory.
    pub fn new<S: Into<String>>(
        argv: impl IntoIterator<Item = S>,
        env: impl Fn(&str) -> Option<String>,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        Invocation {
            argv: argv.into_iter().map(Into::into).collect(),
            env: relevant_env(env),
            cwd: cwd.into(),
        }
    }

    /// The command line, the program first.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The variables kept ([`VARS`] that are set): what a capture's `start` record holds.
    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// What Claude Code will do about MCP servers: the variables, and the servers of every
    /// `--mcp-config` (inline JSON, or a file read with `read(path)`, the path joined to the
    /// working directory; `Err` is the problem to report, and the file's servers get the
    /// default limits).
    pub fn mcp(&self, read: impl FnMut(&Path) -> Result<String, String>) -> McpSetup {
        McpSetup::read(&self.argv, &self.env, &self.cwd, read)
    }

    /// Whether it reads stream-json on stdin ([`session::reads_stream_json_input`]).
    pub fn reads_stream_json_input(&self) -> bool {
        session::reads_stream_json_input(&self.argv)
    }

    /// Which session it runs, when the command line says ([`session::session_of`]).
    pub fn session(&self) -> Session<'_> {
        session::session_of(&self.argv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the MCP variables are kept, from whatever environment the host has, and the MCP
    /// setup reads the same ones.
    #[test]
    fn only_the_mcp_variables_are_kept() {
        let inv = Invocation::new(
            ["claude"],
            |k| Some(format!("{k}-value")).filter(|_| k != "MCP_TOOL_TIMEOUT"),
            "/",
        );
        let keys: Vec<&str> = inv.env().keys().map(String::as_str).collect();
        assert_eq!(keys, ["CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT", "MCP_TIMEOUT"]);
        assert_eq!(inv.mcp(|_| Err(String::new())).env, *inv.env());
    }
}

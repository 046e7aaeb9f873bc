//! The child's Claude Code as `run`, `replay` and `audit` see it: the core's facts
//! ([`watchdog_core::mcp`]: the MCP rule, the `mcp__` naming; [`watchdog_host::claude_code`]: the invocation, the session flags) over
//! what only a host reads: the environment, the working directory, and the MCP config files a
//! command line names ([`read_config`]: regular files only).
//!
//! Only the variables of [`VARS`](watchdog_core::mcp::VARS) are read, and
//! only they are recorded in a capture's `start` record (never the rest of the environment).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use watchdog_core::mcp::McpSetup;
use watchdog_core::Limits;
use watchdog_host::capture::{Entry, Record, StartFacts};
use watchdog_host::claude_code::{relevant_env, Invocation};

/// An MCP config larger than this is not read (its servers get the default limits).
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The child's environment as `run` will give it: `env` when set, else ours.
fn child_env(env: Option<&[(OsString, OsString)]>) -> impl Fn(&str) -> Option<String> + '_ {
    move |k: &str| match env {
        Some(env) => env
            .iter()
            .find(|(ek, _)| ek == k)
            .map(|(_, v)| v.to_string_lossy().into_owned()),
        None => std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()),
    }
}

/// How `run` starts the child: `argv` (the program first), its environment (`env` when set,
/// else ours) and its working directory.
pub(crate) fn invocation(
    argv: &[OsString],
    env: Option<&[(OsString, OsString)]>,
    cwd: &Path,
) -> Invocation {
    Invocation::new(
        argv.iter().map(|a| a.to_string_lossy().into_owned()),
        child_env(env),
        cwd,
    )
}

/// The MCP variables of the child's environment, for the capture's `start` record.
pub(crate) fn recorded_env(env: Option<&[(OsString, OsString)]>) -> BTreeMap<String, String> {
    relevant_env(child_env(env))
}

/// One MCP config file a command line names, for [`Invocation::mcp`]. Only a regular file is
/// read: a pipe (`--mcp-config <(…)`, `/dev/fd/N`) or a FIFO is claude's to read (we would
/// drain it, or block before the spawn). `Err`: the problem, in words.
pub(crate) fn read_config(path: &Path) -> Result<String, String> {
    match agent_sdk_watchdog::read_regular(path, MAX_CONFIG_BYTES, true) {
        Ok(t) => Ok(String::from_utf8_lossy(&t).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Err(format!(
            "the MCP config {e}: not read, left for claude alone"
        )),
        Err(e) => Err(format!(
            "cannot read the MCP config {}: {e}",
            path.display()
        )),
    }
}

/// What a recorded child used: its `start` record's environment and command line (configs
/// are read relative to the current directory, when still readable).
fn recorded_setup(start: &StartFacts) -> McpSetup {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    Invocation::new(
        start.argv.iter().cloned(),
        |k| start.env.get(k).cloned(),
        cwd,
    )
    .mcp(read_config)
}

/// `limits` with the MCP rule applied for a recorded run: the environment of the capture's
/// `start` record (Claude Code's defaults without one).
pub(crate) fn for_capture(limits: Limits, entries: &[Entry]) -> Limits {
    let setup = entries
        .iter()
        .find_map(|e| match &e.record {
            Record::Start { argv, env, .. } => Some(recorded_setup(&StartFacts {
                argv: argv.clone(),
                env: env.clone(),
            })),
            _ => None,
        })
        .unwrap_or_default();
    limits.with_mcp_setup(&setup).0
}

/// `limits` with the MCP rule applied for a capture whose `start` record says `start`;
/// unchanged without one (the defaults already hold).
pub(crate) fn for_start<'l>(limits: &'l Limits, start: Option<&StartFacts>) -> Cow<'l, Limits> {
    match start {
        Some(start) => Cow::Owned(limits.clone().with_mcp_setup(&recorded_setup(start)).0),
        None => Cow::Borrowed(limits),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use watchdog_core::McpLimits;

    use super::*;

    fn s(x: u64) -> Duration {
        Duration::from_secs(x)
    }

    fn setup(argv: &[&str], cwd: &Path) -> McpSetup {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        invocation(&argv, Some(&[]), cwd).mcp(read_config)
    }

    /// Issue 28 (5): a config that is a pipe (`--mcp-config <(…)`: `/dev/fd/N`), a FIFO with no
    /// writer, a device or a directory is never opened: nothing drained, nothing blocks.
    #[cfg(unix)]
    #[test]
    fn only_regular_config_files_are_read_and_pipes_are_left_for_claude() {
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let (mut reader, mut writer) = std::io::pipe().unwrap();
        let config = br#"{"mcpServers":{"probe":{"command":"p","timeout":60000}}}"#;
        writer.write_all(config).unwrap();
        drop(writer);
        let fd = reader.as_raw_fd();
        for path in [
            format!("/dev/fd/{fd}"),
            format!("/proc/self/fd/{fd}"),
            fifo.display().to_string(),
            "/dev/zero".to_owned(),
            dir.path().display().to_string(),
        ] {
            let c = setup(&["claude", "--mcp-config", &path], dir.path());
            assert!(c.has_config, "{path}");
            assert_eq!(c.problems.len(), 1, "{path}: {:?}", c.problems);
            assert!(
                c.problems[0].contains("not a regular file") && c.problems[0].contains("claude"),
                "{path}: {:?}",
                c.problems
            );
        }
        let mut left = Vec::new();
        reader.read_to_end(&mut left).unwrap();
        assert_eq!(left, config, "the pipe was not drained");
    }

    #[test]
    fn config_files_are_read_relative_to_the_childs_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mcp.json"),
            r#"{"mcpServers":{"probe":{"command":"p","timeout":60000}}}"#,
        )
        .unwrap();
        let c = setup(
            &["claude", "--mcp-config=mcp.json", "missing.json"],
            dir.path(),
        );
        assert_eq!(McpLimits::from_setup(&c).give_up_for("probe"), Some(s(60)));
        let c = setup(
            &["claude", "--mcp-config", "missing.json", "bad"],
            dir.path(),
        );
        assert_eq!(c.problems.len(), 2, "{:?}", c.problems);
        assert!(c.has_config);
    }

    /// The child's environment is the one `run` gives it: only the MCP variables of it.
    #[test]
    fn the_childs_environment_is_the_given_one_and_only_its_mcp_variables_are_kept() {
        let env: Vec<(OsString, OsString)> = [
            ("MCP_TIMEOUT", "9000"),
            ("HOME", "/h"),
            ("MCP_TOOL_TIMEOUT", "20000"),
        ]
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
        let recorded = recorded_env(Some(&env));
        assert_eq!(
            recorded,
            BTreeMap::from([
                ("MCP_TIMEOUT".to_owned(), "9000".to_owned()),
                ("MCP_TOOL_TIMEOUT".to_owned(), "20000".to_owned())
            ])
        );
        let inv = invocation(&[OsString::from("claude")], Some(&env), Path::new("/"));
        assert_eq!(*inv.env(), recorded);
    }
}

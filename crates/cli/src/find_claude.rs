//! Finding the real `claude` binary: for `claude-watchdog` (never itself) and for `demo`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The command that installs the project's pinned Claude Code CLI.
pub const INSTALL_COMMAND: &str = "scripts/install-claude";

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The first executable `claude` on `path` (a `PATH`-style list) that is not `skip`.
pub fn on_path(path: &OsStr, skip: Option<&Path>) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join("claude"))
        .filter(|c| is_executable(c))
        .find(|c| !skip.is_some_and(|s| same_file(c, s)))
}

/// The project's local install (`.tools/claude/node_modules/.bin/claude`), looked up from the
/// current directory and from this executable's location upwards.
pub fn local_install() -> Option<PathBuf> {
    let mut starts: Vec<PathBuf> = Vec::new();
    if let Ok(d) = std::env::current_dir() {
        starts.push(d);
    }
    if let Ok(e) = std::env::current_exe() {
        starts.push(e);
    }
    starts.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    for s in starts {
        for dir in s.ancestors() {
            let c = dir.join(".tools/claude/node_modules/.bin/claude");
            if is_executable(&c) {
                return Some(c);
            }
        }
    }
    None
}

/// The real `claude` for the drop-in: `AGENT_WATCHDOG_CLAUDE`, else the first `claude` on
/// `PATH` that is not this executable.
pub fn for_drop_in() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("AGENT_WATCHDOG_CLAUDE").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let me = std::env::current_exe().ok();
    let path = std::env::var_os("PATH").unwrap_or_default();
    on_path(&path, me.as_deref()).ok_or_else(|| {
        "cannot find the real claude: set AGENT_WATCHDOG_CLAUDE to its path, or put it on PATH"
            .to_string()
    })
}

/// The `claude` for `demo`: `explicit`, else the project's local install, else `PATH`.
pub fn for_demo(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return if is_executable(p) {
            Ok(p.to_owned())
        } else {
            Err(format!("{} is not an executable claude", p.display()))
        };
    }
    if let Some(p) = local_install() {
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    on_path(&path, std::env::current_exe().ok().as_deref()).ok_or_else(|| {
        format!(
            "no claude found (not in .tools/claude, not on PATH); install the pinned Claude Code \
             CLI with: {INSTALL_COMMAND}"
        )
    })
}

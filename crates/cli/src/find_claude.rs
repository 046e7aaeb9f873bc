//! Finding the real `claude` binary for `claude-watchdog` (never itself). `demo` uses the mock
//! harness's lookup (`CLAUDE_BIN`, the project's `.tools/claude`, `PATH`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

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
        .map(|dir| dir.join(format!("claude{}", std::env::consts::EXE_SUFFIX)))
        .filter(|c| is_executable(c))
        .find(|c| !skip.is_some_and(|s| same_file(c, s)))
}

/// The real `claude` for the drop-in: `AGENT_WATCHDOG_CLAUDE`, else the first `claude` on
/// `PATH` that is not this executable.
pub fn for_drop_in() -> Result<PathBuf, String> {
    let me = std::env::current_exe().ok();
    if let Some(p) = std::env::var_os(crate::options::CLAUDE.env).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if me.as_deref().is_some_and(|me| same_file(&p, me)) {
            return Err(format!(
                "AGENT_WATCHDOG_CLAUDE={} is this drop-in itself; point it at the real claude",
                p.display()
            ));
        }
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    on_path(&path, me.as_deref()).ok_or_else(|| {
        "cannot find the real claude: set AGENT_WATCHDOG_CLAUDE to its path, or put it on PATH"
            .to_string()
    })
}

//! Where the ledger lives by default: the state directory from `XDG_STATE_HOME` and `HOME`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Name of the application directory inside the state home.
pub const STATE_DIR_NAME: &str = "agent-watchdog";

/// The default state directory, from the values of `XDG_STATE_HOME` and `HOME`:
/// `$XDG_STATE_HOME/agent-watchdog` if it is set to an absolute path (the XDG rule: a relative
/// one is ignored), else `$HOME/.local/state/agent-watchdog`; `None` if neither gives an
/// absolute path.
///
/// ```
/// use std::ffi::OsStr;
/// use std::path::Path;
/// use agent_sdk_watchdog::default_state_dir;
///
/// let dir = default_state_dir(None, Some(OsStr::new("/home/ada")));
/// assert_eq!(dir.as_deref(), Some(Path::new("/home/ada/.local/state/agent-watchdog")));
/// ```
pub fn default_state_dir(xdg_state_home: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
    if let Some(xdg) = absolute(xdg_state_home) {
        return Some(xdg.join(STATE_DIR_NAME));
    }
    absolute(home).map(|h| h.join(".local").join("state").join(STATE_DIR_NAME))
}

fn absolute(value: Option<&OsStr>) -> Option<&Path> {
    value.map(Path::new).filter(|p| p.is_absolute())
}

/// [`default_state_dir`] with this process's `XDG_STATE_HOME` and `HOME`. On Windows,
/// `%LOCALAPPDATA%` (`C:\Users\<you>\AppData\Local`) stands in for an unset
/// `XDG_STATE_HOME`: the ledger is `%LOCALAPPDATA%\agent-watchdog` there.
pub fn default_state_dir_from_env() -> Option<PathBuf> {
    let state_home = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| Path::new(v).is_absolute())
        .or_else(|| std::env::var_os("LOCALAPPDATA").filter(|_| cfg!(windows)));
    default_state_dir(state_home.as_deref(), std::env::var_os("HOME").as_deref())
}

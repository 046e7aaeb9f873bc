//! `agent-watchdog plugin-dir`: where the installed package keeps the subagent plugin, for
//! `claude --plugin-dir` (the pip and npm packages carry a copy of the repository's `plugin/`).

use std::path::{Path, PathBuf};

/// Whether `dir` is a plugin directory (it has the manifest).
fn is_plugin(dir: &Path) -> bool {
    dir.join(".claude-plugin").join("plugin.json").is_file()
}

/// The places the packages put the plugin, relative to the installed executable `exe`:
/// the npm platform package's `…/node_modules/@agent-sdk-watchdog/<platform>/bin/agent-watchdog`
/// next to the main package's `…/node_modules/agent-sdk-watchdog/plugin`, and the wheel's
/// `<prefix>/bin/agent-watchdog` with `<prefix>/lib/python*/{site,dist}-packages/agent_sdk_watchdog/plugin`.
pub(crate) fn candidates(exe: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Some(bin) = exe.parent() else {
        return out;
    };
    if let Some(node_modules) = bin.parent().and_then(Path::parent).and_then(Path::parent) {
        out.push(node_modules.join("agent-sdk-watchdog").join("plugin"));
    }
    if let Some(prefix) = bin.parent() {
        let lib = prefix.join("lib");
        let mut pythons: Vec<PathBuf> = std::fs::read_dir(&lib)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        pythons.sort();
        if pythons.is_empty() {
            pythons.push(lib.join("python3"));
        }
        for py in pythons {
            for packages in ["site-packages", "dist-packages"] {
                out.push(py.join(packages).join("agent_sdk_watchdog").join("plugin"));
            }
        }
    }
    out
}

/// The installed plugin directory for the executable `exe`, or every place looked at.
pub(crate) fn find(exe: &Path) -> Result<PathBuf, Vec<PathBuf>> {
    let all = candidates(exe);
    all.iter().find(|d| is_plugin(d)).cloned().ok_or(all)
}

/// Prints the plugin directory of this installation; exit 1 with where it looked when there is
/// none (a cargo install: use the repository's `plugin/`).
pub fn main() -> i32 {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("agent-watchdog: plugin-dir: cannot locate this executable: {e}");
            return crate::exit_code::INTERNAL;
        }
    };
    match find(&exe) {
        Ok(dir) => {
            println!("{}", dir.display());
            0
        }
        Err(looked) => {
            let looked: Vec<String> = looked.iter().map(|p| p.display().to_string()).collect();
            eprintln!(
                "agent-watchdog: plugin-dir: this installation ({}) carries no plugin (looked in {}). \
                 The pip and npm packages carry one; installed with cargo, use plugin/ of the \
                 agent-sdk-watchdog repository.",
                exe.display(),
                looked.join(", ")
            );
            crate::exit_code::INTERNAL
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin_at(dir: &Path) {
        std::fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
        std::fs::write(dir.join(".claude-plugin/plugin.json"), "{}").unwrap();
    }

    #[test]
    fn finds_the_npm_main_packages_plugin_from_the_platform_packages_binary() {
        let t = tempfile::tempdir().unwrap();
        let nm = t.path().join("node_modules");
        let exe = nm.join("@agent-sdk-watchdog/linux-x64/bin/agent-watchdog");
        assert!(find(&exe).is_err(), "no plugin yet");
        plugin_at(&nm.join("agent-sdk-watchdog/plugin"));
        assert_eq!(find(&exe).unwrap(), nm.join("agent-sdk-watchdog/plugin"));
    }

    #[test]
    fn finds_the_wheels_plugin_from_the_environments_bin() {
        let t = tempfile::tempdir().unwrap();
        let exe = t.path().join("bin/agent-watchdog");
        let site = t.path().join("lib/python3.11/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        let looked = find(&exe).unwrap_err();
        assert!(
            looked.contains(&site.join("agent_sdk_watchdog/plugin")),
            "{looked:?}"
        );
        plugin_at(&site.join("agent_sdk_watchdog/plugin"));
        assert_eq!(find(&exe).unwrap(), site.join("agent_sdk_watchdog/plugin"));
    }

    #[test]
    fn a_directory_without_the_manifest_is_not_the_plugin() {
        let t = tempfile::tempdir().unwrap();
        let exe = t.path().join("bin/agent-watchdog");
        std::fs::create_dir_all(
            t.path()
                .join("lib/python3.11/site-packages/agent_sdk_watchdog/plugin/hooks"),
        )
        .unwrap();
        assert!(find(&exe).is_err());
    }
}

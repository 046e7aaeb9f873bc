//! Which commands are shells, for what a receipt names.

/// Whether `cmd` (a sampled command line) runs a shell: the wrappers a tool's command runs in,
/// which a receipt names only when nothing else is there.
pub(crate) fn is_shell(cmd: &str) -> bool {
    let argv0 = cmd.split(' ').next().unwrap_or("");
    let base = argv0.rsplit('/').next().unwrap_or(argv0);
    matches!(
        base.trim_start_matches('-'),
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "fish"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shells_are_told_apart() {
        assert!(is_shell("/bin/bash -c -l source x"));
        assert!(is_shell("-zsh"));
        assert!(!is_shell("git push"));
        assert!(!is_shell("bashful"));
    }
}

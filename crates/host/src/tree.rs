//! What a host reads of the child's process tree for the core's evidence
//! ([`watchdog_core::evidence`]): a process's command line as the watchdog keeps it, `argv[0]`
//! and a bounded rest, with what looks like a secret redacted ([`command_line`]). It goes into
//! samples, captures, summaries, telemetry and stderr, so what it keeps is chosen for a reader,
//! not for a re-run.

use crate::redact;

/// The longest command line kept, in bytes (longer ones end with `…`).
pub const MAX_COMMAND: usize = 200;

/// `argv` as one line for a reader: `argv[0]`, then the rest separated by spaces, what looks
/// like a secret redacted inside every argument ([`redact::args`]: a `bash -c` script's
/// `export TOKEN=…` as much as `--token …`), control characters shown as `?`, at most
/// [`MAX_COMMAND`] bytes (then `…`), cut after redaction so no secret is cut in two. Bytes
/// that are not UTF-8 are replaced.
///
/// ```
/// use watchdog_host::tree::command_line;
/// assert_eq!(command_line(&["git", "push"]), "git push");
/// assert_eq!(
///     command_line(&["curl", "-H", "Authorization: Bearer abc", "https://u:pw@example.com/x"]),
///     "curl -H Authorization: Bearer *** https://***@example.com/x"
/// );
/// assert_eq!(command_line(&["tool", "--token", "abc", "--api-key=xyz"]), "tool --token *** --api-key=***");
/// assert_eq!(
///     command_line(&["bash", "-c", "export GITHUB_TOKEN=ghp_x && gh pr list"]),
///     "bash -c export GITHUB_TOKEN=*** && gh pr list"
/// );
/// assert!(command_line(&["x".repeat(500)]).ends_with('…'));
/// ```
pub fn command_line<A: AsRef<[u8]>>(argv: &[A]) -> String {
    // Only the arguments up to the one that crosses the bound are read: the rest would be cut
    // (what redaction hides may leave the line shorter than the bound: a loss of words, never
    // of a secret, and no cost for a long command line's every argument).
    let mut raw = 0;
    let kept = argv
        .iter()
        .take_while(|a| {
            let keep = raw <= MAX_COMMAND;
            raw += a.as_ref().len() + 1;
            keep
        })
        .count();
    let shown: Vec<String> = argv[..kept]
        .iter()
        .map(|a| {
            String::from_utf8_lossy(a.as_ref())
                .chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .collect()
        })
        .collect();
    let mut out = match shown.split_first() {
        // `argv[0]` is the program, shown as it is.
        Some((program, rest)) => {
            let mut line = program.clone();
            for arg in redact::args(rest) {
                line.push(' ');
                line.push_str(&arg);
            }
            line
        }
        None => String::new(),
    };
    if out.len() > MAX_COMMAND {
        let mut end = MAX_COMMAND;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_the_rest_kept() {
        let cases: [(&[&str], &str); 8] = [
            (&["ls", "-la"], "ls -la"),
            (
                &["mysql", "--password", "hunter2", "db"],
                "mysql --password *** db",
            ),
            (
                &["env", "GITHUB_TOKEN=ghp_x", "gh"],
                "env GITHUB_TOKEN=*** gh",
            ),
            (&["x", "sk-ant-api03-abcdefgh"], "x ***"),
            (
                &["git", "clone", "https://me:pw@host/r"],
                "git clone https://***@host/r",
            ),
            (
                &["git", "clone", "https://host/a@b"],
                "git clone https://host/a@b",
            ),
            (&["a\nb", "c\td"], "a?b c?d"),
            (&["cargo", "--password=x"], "cargo --password=***"),
        ];
        for (argv, want) in cases {
            assert_eq!(command_line(argv), want, "{argv:?}");
        }
    }

    #[test]
    fn long_lines_are_bounded_on_a_char_boundary_after_redaction() {
        let long = "é".repeat(300);
        let c = command_line(&[long.as_str()]);
        assert!(c.len() <= MAX_COMMAND + '…'.len_utf8());
        assert!(c.ends_with('…'));
        assert_eq!(command_line::<&[u8]>(&[b"\xff\xfe"]), "\u{fffd}\u{fffd}");
        assert_eq!(command_line::<&str>(&[]), "");
        // A token across the bound is redacted whole, not cut in two.
        let script = format!(
            "{} export T=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "x".repeat(180)
        );
        let c = command_line(&["bash", "-c", &script]);
        assert!(!c.contains("ghp_"), "{c}");
    }
}

//! What a host reads of the child's process tree for the core's evidence
//! ([`watchdog_core::evidence`]): a process's command line as the watchdog keeps it, `argv[0]`
//! and a bounded rest, with what looks like a secret redacted ([`command_line`]). It goes into
//! samples, captures, summaries, telemetry and stderr, so what it keeps is chosen for a reader,
//! not for a re-run.

/// The longest command line kept, in bytes (longer ones end with `…`).
pub const MAX_COMMAND: usize = 200;

/// What stands for a redacted value.
const REDACTED: &str = "***";

/// Words in a flag or variable name that say its value is a secret.
const SECRET_WORDS: [&str; 9] = [
    "token",
    "secret",
    "password",
    "passwd",
    "pass",
    "apikey",
    "api_key",
    "api-key",
    "credential",
];

/// Prefixes of well-known secret values (API keys, access tokens).
const SECRET_PREFIXES: [&str; 8] = [
    "sk-",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "AKIA",
];

fn secret_name(name: &str) -> bool {
    let n = name.trim_start_matches('-').to_ascii_lowercase();
    n == "auth" || SECRET_WORDS.iter().any(|w| n.contains(w))
}

/// One argument, redacted: a known secret value, the userinfo of a URL, the value of a
/// `--flag=value` or `NAME=value` whose name says secret, or an `Authorization` header.
fn redact_arg(arg: &str) -> String {
    if SECRET_PREFIXES.iter().any(|p| arg.starts_with(p)) && arg.len() >= 12 {
        return REDACTED.into();
    }
    let lower = arg.to_ascii_lowercase();
    if let Some(i) = lower.find("authorization:") {
        return format!("{} {REDACTED}", &arg[..i + "authorization:".len()]);
    }
    if let Some(scheme) = arg.find("://") {
        let rest = &arg[scheme + 3..];
        let host_end = rest.find('/').unwrap_or(rest.len());
        if let Some(at) = rest[..host_end].rfind('@') {
            return format!("{}{REDACTED}@{}", &arg[..scheme + 3], &rest[at + 1..]);
        }
    }
    if let Some((name, _)) = arg.split_once('=') {
        if !name.is_empty() && !name.contains(' ') && secret_name(name) {
            return format!("{name}={REDACTED}");
        }
    }
    arg.to_owned()
}

/// `argv` as one line for a reader: `argv[0]`, then the rest separated by spaces, each
/// argument redacted where it looks like a secret (the value after a flag named like one,
/// `--token=…`, `NAME_TOKEN=…`, a URL's `user:password@`, an `Authorization:` header, keys
/// with a well-known prefix such as `sk-…`), control characters shown as `?`, at most
/// [`MAX_COMMAND`] bytes (then `…`). Bytes that are not UTF-8 are replaced.
///
/// ```
/// use watchdog_host::tree::command_line;
/// assert_eq!(command_line(&["git", "push"]), "git push");
/// assert_eq!(
///     command_line(&["curl", "-H", "Authorization: Bearer abc", "https://u:pw@example.com/x"]),
///     "curl -H Authorization: *** https://***@example.com/x"
/// );
/// assert_eq!(command_line(&["tool", "--token", "abc", "--api-key=xyz"]), "tool --token *** --api-key=***");
/// assert!(command_line(&["x".repeat(500)]).ends_with('…'));
/// ```
pub fn command_line<A: AsRef<[u8]>>(argv: &[A]) -> String {
    let mut out = String::new();
    let mut hide_next = false;
    for (i, arg) in argv.iter().enumerate() {
        let arg = String::from_utf8_lossy(arg.as_ref());
        let arg: String = arg
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        let shown = if hide_next {
            REDACTED.to_owned()
        } else if i == 0 {
            arg.clone()
        } else {
            redact_arg(&arg)
        };
        hide_next = i > 0 && arg.starts_with('-') && !arg.contains('=') && secret_name(&arg);
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&shown);
        if out.len() > MAX_COMMAND {
            break;
        }
    }
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
    fn long_lines_are_bounded_on_a_char_boundary() {
        let long = "é".repeat(300);
        let c = command_line(&[long.as_str()]);
        assert!(c.len() <= MAX_COMMAND + '…'.len_utf8());
        assert!(c.ends_with('…'));
        assert_eq!(command_line::<&[u8]>(&[b"\xff\xfe"]), "\u{fffd}\u{fffd}");
        assert_eq!(command_line::<&str>(&[]), "");
    }
}

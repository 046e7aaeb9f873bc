//! The one-time hints: a `claude`, `codex` or `opencode` command that lacks the flags that make
//! it print its events, and a `codex` or `opencode` command whose stdin is a pipe it would wait
//! on.

use std::ffi::OsString;
use std::path::Path;

use watchdog_core::Dialect;

/// Whether `program` names the Claude Code CLI (`claude`, or a path ending in it).
pub fn is_claude(program: &OsString) -> bool {
    Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "claude" || n == "claude.exe")
}

/// The flags a `claude`, `codex` or `opencode` command line lacks for the watchdog to see its
/// progress, as the text of a hint; `None` when nothing is missing or the command is not one
/// of them.
pub fn missing_flags_hint(argv: &[OsString]) -> Option<String> {
    let (program, args) = argv.split_first()?;
    if !is_claude(program) {
        return other_cli_hint(argv);
    }
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let stream_json = args.iter().enumerate().any(|(i, a)| {
        a == "--output-format=stream-json"
            || (a == "--output-format" && args.get(i + 1).is_some_and(|v| v == "stream-json"))
    });
    let verbose = args.iter().any(|a| a == "--verbose");
    let partial = args.iter().any(|a| a == "--include-partial-messages");
    let mut missing = Vec::new();
    if !stream_json {
        missing.push("--output-format stream-json");
    }
    if !verbose {
        missing.push("--verbose");
    }
    if !stream_json || !verbose {
        if !partial {
            missing.push("--include-partial-messages");
        }
        return Some(format!(
            "hint: this claude command does not print stream-json, so the watchdog only sees \
             its silence, not its progress; add: {}",
            missing.join(" ")
        ));
    }
    if !partial {
        return Some(
            "hint: add --include-partial-messages so the watchdog sees the model's stream \
             (thinking, writing, keep-alive pings) and not only whole messages"
                .into(),
        );
    }
    None
}

/// The command line as text.
fn words(argv: &[OsString]) -> Vec<String> {
    argv.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// What a `codex` or `opencode` command lacks to print its JSON events.
fn other_cli_hint(argv: &[OsString]) -> Option<String> {
    let words = words(argv);
    let has = |flag: &str, value: &str| {
        words.iter().enumerate().any(|(i, a)| {
            *a == format!("{flag}={value}")
                || (a == flag && words.get(i + 1).is_some_and(|v| v == value))
        })
    };
    let (name, add) = match watchdog_host::dialect::of_command(&words)? {
        Dialect::Codex if !words.iter().any(|a| a == "--json") => ("codex", "exec --json"),
        Dialect::Opencode if !has("--format", "json") => ("opencode", "run --format json"),
        _ => return None,
    };
    Some(format!(
        "hint: this {name} command does not print its JSON events, so the watchdog only sees \
         its silence, not its progress; add: {add}"
    ))
}

/// What the host's stdin is, as far as a hint cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinKind {
    /// A terminal (the child gets `/dev/null`), a regular file, `/dev/null`, or not known:
    /// it ends, or nobody is waiting on it.
    Ends,
    /// A pipe or a socket: it ends when its writer closes it, maybe never.
    Stream,
}

/// The host's stdin (a pipe or a socket is a [`StdinKind::Stream`]).
pub fn stdin_kind() -> StdinKind {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return StdinKind::Ends;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if let Ok(m) = std::fs::metadata("/dev/stdin") {
            let t = m.file_type();
            if t.is_fifo() || t.is_socket() {
                return StdinKind::Stream;
            }
        }
    }
    StdinKind::Ends
}

/// Codex and opencode read their stdin to its end before they start when it is not a
/// terminal (prompt in argv or not): on a pipe nobody closes they wait without a line, until
/// `--startup`. The hint, for those commands on such a stdin.
pub fn stdin_hint(argv: &[OsString], stdin: StdinKind) -> Option<String> {
    if stdin != StdinKind::Stream {
        return None;
    }
    let name = match watchdog_host::dialect::of_command(&words(argv))? {
        Dialect::Codex => "codex",
        Dialect::Opencode => "opencode",
        _ => return None,
    };
    Some(format!(
        "hint: {name} reads its stdin to the end before it starts, and this stdin is a pipe: \
         unless something writes it and closes it, give {name} </dev/null (else it waits \
         without a line until --startup)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<OsString> {
        s.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn names_exactly_the_missing_flags() {
        let h = missing_flags_hint(&argv("claude -p hi")).unwrap();
        assert!(
            h.ends_with("add: --output-format stream-json --verbose --include-partial-messages")
        );
        let h =
            missing_flags_hint(&argv("/usr/bin/claude -p hi --output-format stream-json")).unwrap();
        assert!(
            h.ends_with("add: --verbose --include-partial-messages"),
            "{h}"
        );
        let h = missing_flags_hint(&argv("claude -p hi --output-format=stream-json --verbose"))
            .unwrap();
        assert!(h.contains("--include-partial-messages"));
        assert!(missing_flags_hint(&argv(
            "claude -p hi --output-format stream-json --verbose --include-partial-messages"
        ))
        .is_none());
        assert!(missing_flags_hint(&argv("python3 agent.py")).is_none());
    }

    #[test]
    fn codex_and_opencode_are_told_the_flag_that_prints_their_events() {
        let h = missing_flags_hint(&argv("codex exec fix-it")).unwrap();
        assert!(
            h.contains("this codex command") && h.ends_with("add: exec --json"),
            "{h}"
        );
        assert!(missing_flags_hint(&argv("codex exec --json fix-it")).is_none());
        let h = missing_flags_hint(&argv("npx opencode-ai run fix-it")).unwrap();
        assert!(h.ends_with("add: run --format json"), "{h}");
        assert!(missing_flags_hint(&argv("opencode run --format json fix-it")).is_none());
        assert!(missing_flags_hint(&argv("opencode run --format=json fix-it")).is_none());
    }

    #[test]
    fn a_pipe_for_stdin_is_named_for_the_clis_that_wait_on_it() {
        let h = stdin_hint(&argv("codex exec --json x"), StdinKind::Stream).unwrap();
        assert!(h.contains("codex reads its stdin to the end"), "{h}");
        assert!(stdin_hint(&argv("opencode run x"), StdinKind::Stream).is_some());
        assert!(stdin_hint(&argv("codex exec x"), StdinKind::Ends).is_none());
        assert!(stdin_hint(&argv("claude -p x"), StdinKind::Stream).is_none());
    }
}

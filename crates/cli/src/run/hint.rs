//! The one-time hint when a `claude` command lacks the flags that make it print stream-json.

use std::ffi::OsString;
use std::path::Path;

/// Whether `program` names the Claude Code CLI (`claude`, or a path ending in it).
pub fn is_claude(program: &OsString) -> bool {
    Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "claude" || n == "claude.exe")
}

/// The flags a `claude` command line lacks for the watchdog to see its progress, as the text
/// of a hint; `None` when nothing is missing or the command is not `claude`.
pub fn missing_flags_hint(argv: &[OsString]) -> Option<String> {
    let (program, args) = argv.split_first()?;
    if !is_claude(program) {
        return None;
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
}

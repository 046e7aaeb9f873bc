//! The continuation command: the user's own `claude` command line, turned into one that resumes
//! the same session with the continuation prompt.
//!
//! The prompt of `claude -p` is the argument right after `-p`/`--print` (the documented form,
//! `claude -p "fix the test" --output-format stream-json …`). When it is there, it is replaced by
//! the continuation prompt and `--resume <session id>` is added; every other argument is kept, so
//! the continuation runs with the same model, tools, permissions and output format. Flags that
//! would start or pick another session (`--continue`, `--session-id`, `--fork-session`, an older
//! `--resume`: the core's [`SESSION_FLAGS`]) are removed. When the prompt cannot be located (it comes from stdin, or `-p` is
//! followed by another flag), there is no safe rewrite and the answer is an error: no
//! continuation (fail closed).

use std::ffi::{OsStr, OsString};

use watchdog_host::claude_code::session::{reads_stream_json_input, SESSION_FLAGS};

/// Why the command cannot be turned into a continuation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContinuationError {
    /// No `-p`/`--print` followed by a prompt argument.
    #[error("the prompt could not be located in the command (expected `-p \"<prompt>\"`)")]
    NoPrompt,
    /// The session reads its prompts from stdin (`--input-format stream-json`).
    #[error("the session reads its prompts from stdin (--input-format stream-json)")]
    StdinPrompts,
}

fn is(arg: &OsStr, name: &str) -> bool {
    arg == OsStr::new(name)
}

fn starts_with_flag(arg: &OsStr, name: &str) -> bool {
    arg.to_str()
        .is_some_and(|s| s.strip_prefix(name).is_some_and(|r| r.starts_with('=')))
}

/// Build the continuation of `argv` (program first) for `session_id` with `prompt`: the same
/// command line with the prompt replaced and `--resume <session_id>` added
/// (`claude -p "fix it" …` → `claude -p continue … --resume <id>`).
pub fn continuation_argv(
    argv: &[OsString],
    session_id: &str,
    prompt: &str,
) -> Result<Vec<OsString>, ContinuationError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(ContinuationError::NoPrompt);
    };
    if reads_stream_json_input(args.iter().map(|a| a.to_string_lossy())) {
        return Err(ContinuationError::StdinPrompts);
    }
    let mut out = vec![program.clone()];
    let mut replaced = false;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if let Some(&(_, takes_value)) = SESSION_FLAGS.iter().find(|(f, _)| is(a, f)) {
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        if SESSION_FLAGS.iter().any(|(f, _)| starts_with_flag(a, f)) {
            i += 1;
            continue;
        }
        if !replaced && (is(a, "-p") || is(a, "--print")) {
            match args.get(i + 1) {
                Some(next) if !next.to_string_lossy().starts_with('-') => {
                    out.push(a.clone());
                    out.push(prompt.into());
                    replaced = true;
                    i += 2;
                    continue;
                }
                _ => return Err(ContinuationError::NoPrompt),
            }
        }
        out.push(a.clone());
        i += 1;
    }
    if !replaced {
        return Err(ContinuationError::NoPrompt);
    }
    out.push("--resume".into());
    out.push(session_id.into());
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_prompt_is_replaced_and_the_session_resumed() {
        let argv: Vec<OsString> = [
            "claude",
            "-p",
            "fix it",
            "--output-format",
            "stream-json",
            "--verbose",
        ]
        .map(OsString::from)
        .into();
        let id = "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc";
        let next = continuation_argv(&argv, id, "continue").unwrap();
        assert_eq!(
            next,
            [
                "claude",
                "-p",
                "continue",
                "--output-format",
                "stream-json",
                "--verbose",
                "--resume",
                id
            ]
            .map(OsString::from)
        );
    }

    use super::*;

    fn v(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    const SID: &str = "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc";

    #[test]
    fn replaces_the_prompt_and_adds_resume_keeping_every_other_flag() {
        let argv = v(&[
            "/usr/bin/claude",
            "--model",
            "mock-model-1",
            "--print",
            "write the report",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions",
        ]);
        let next = continuation_argv(&argv, SID, "continue from where you stopped").unwrap();
        assert_eq!(
            next,
            v(&[
                "/usr/bin/claude",
                "--model",
                "mock-model-1",
                "--print",
                "continue from where you stopped",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "bypassPermissions",
                "--resume",
                SID
            ])
        );
    }

    #[test]
    fn drops_flags_that_would_pick_or_fork_another_session() {
        let argv = v(&[
            "claude",
            "-p",
            "task",
            "--resume",
            "old-id",
            "--fork-session",
            "-c",
            "--session-id=11111111-1111-1111-1111-111111111111",
            "--verbose",
        ]);
        let next = continuation_argv(&argv, SID, "go on").unwrap();
        assert_eq!(
            next,
            v(&["claude", "-p", "go on", "--verbose", "--resume", SID])
        );
    }

    /// Whatever session flags the user's command had, the continuation runs the session it
    /// resumes, by the core's rule of which session a command line runs (the run then checks
    /// the session its `system/init` names).
    #[test]
    fn the_continuation_runs_the_resumed_session_by_the_cores_rule() {
        use watchdog_host::claude_code::session::{session_of, Session};
        for argv in [
            v(&["claude", "-p", "task"]),
            v(&["claude", "-p", "task", "--continue"]),
            v(&["claude", "-r", "old", "-p", "task", "--fork-session"]),
            v(&[
                "claude",
                "--resume=old",
                "-p",
                "task",
                "--session-id",
                "other",
            ]),
            v(&["claude", "-c", "-p", "task", "-r=old"]),
        ] {
            let next = continuation_argv(&argv, SID, "go on").unwrap();
            let next: Vec<String> = next
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            assert_eq!(
                session_of(&next),
                Session::Resume(SID),
                "{argv:?} -> {next:?}"
            );
        }
    }

    #[test]
    fn fails_closed_when_the_prompt_cannot_be_located() {
        for argv in [
            v(&["claude", "--output-format", "stream-json"]),
            v(&["claude", "-p", "--verbose"]),
            v(&["claude", "-p"]),
            v(&[]),
        ] {
            assert_eq!(
                continuation_argv(&argv, SID, "x"),
                Err(ContinuationError::NoPrompt),
                "{argv:?}"
            );
        }
        let bidir = v(&[
            "claude",
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
        ]);
        assert_eq!(
            continuation_argv(&bidir, SID, "x"),
            Err(ContinuationError::StdinPrompts)
        );
    }
}

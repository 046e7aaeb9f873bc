//! Which session a Claude Code command line runs, and how it takes its prompts.
//!
//! `claude --resume <id>` runs session `<id>` again (the `system/init` of the run names it;
//! recovery's continuation relies on that and checks it,
//! [`SessionConfig::with_expected_session`](watchdog_core::SessionConfig::with_expected_session)),
//! unless `--fork-session` makes it a new one. `--session-id <id>` starts session `<id>`.
//! `--continue` picks the most recent session of the working directory, which the command line
//! does not name.

/// The flags that choose the session, each with whether it takes a value: a command line
/// rewritten to run another session drops them all.
pub const SESSION_FLAGS: &[(&str, bool)] = &[
    ("--resume", true),
    ("-r", true),
    ("--session-id", true),
    ("--continue", false),
    ("-c", false),
    ("--fork-session", false),
];

/// The environment variables that change what `claude --resume` does beyond resuming the
/// session, each with why: a continuation (the resume recovery starts with one prompt of its
/// own) runs without them, so it starts exactly one new user turn whatever the inherited
/// environment holds. Measured with Claude Code 2.1.332: with
/// `CLAUDE_CODE_RESUME_INTERRUPTED_TURN=1` a resume re-submits the interrupted turn (with
/// `CLAUDE_CODE_RESUME_PROMPT`'s text) before the continuation's own prompt: two new turns.
///
/// Kept, because they add no turn and are the user's to set: the resume tuning
/// (`CLAUDE_CODE_RESUME_CACHE_WARM`, `…_THRESHOLD_MINUTES`, `…_TOKEN_THRESHOLD`,
/// `…_HINT_COMMAND`, `…_SESSIONSTART_HOOKS_WAIT_MS`, `…_TOLERATES_CONTEXT_APPENDS`,
/// `…_TOLERATES_CONTEXT_SEEDS`) and `CLAUDE_CODE_DISABLE_DEFERRED_TOOL_RESUME` (it only
/// turns a resume behaviour off).
pub const RESUME_TURN_VARS: &[(&str, &str)] = &[
    (
        "CLAUDE_CODE_RESUME_INTERRUPTED_TURN",
        "re-submits the interrupted turn on resume: a second new turn",
    ),
    (
        "CLAUDE_CODE_RESUME_INTERRUPTED_TURN_MAX_AGE_MS",
        "how old an interrupted turn may be to be re-submitted",
    ),
    (
        "CLAUDE_CODE_RESUME_PROMPT",
        "the text of the re-submitted turn",
    ),
    (
        "CLAUDE_CODE_RESUME_REASON",
        "marks the first reply as the re-run of an interrupted turn",
    ),
    (
        "CLAUDE_CODE_RESUME_SHOWS_CUT_OFF_CALLS",
        "shows the model the tool calls the interruption cut off",
    ),
    (
        "CLAUDE_CODE_RESUME_SOURCE_ALIVE",
        "a background worker's restart state: the source session still runs",
    ),
    (
        "CLAUDE_CODE_RESUME_FROM_SESSION",
        "hydrates the run from another session: another conversation",
    ),
    (
        "CLAUDE_CODE_SESSION_BEGAN_AS_COPY",
        "a background worker's restart state",
    ),
    (
        "CLAUDE_BG_POST_CLEAR_RESPAWN",
        "a background worker's restart state",
    ),
];

/// Which session a command line runs, as far as it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session<'a> {
    /// No session flag: a new session, whose id the run's `system/init` tells.
    New,
    /// `--resume <id>` (or `-r`) without `--fork-session`: session `<id>` again.
    Resume(&'a str),
    /// `--session-id <id>` alone: a new session with that id.
    Given(&'a str),
    /// Another combination (`--continue`, `--fork-session`, several session flags, a flag
    /// without its value): the command line does not say which session runs.
    Unknown,
}

/// The session flag `arg` is, with whether it takes a value and the value given with `=`
/// (`--resume=<id>`), if any.
fn session_flag(arg: &str) -> Option<(&'static str, bool, Option<&str>)> {
    SESSION_FLAGS.iter().find_map(|&(flag, takes_value)| {
        if arg == flag {
            return Some((flag, takes_value, None));
        }
        let value = arg.strip_prefix(flag)?.strip_prefix('=')?;
        Some((flag, takes_value, Some(value)))
    })
}

/// Which session `argv` (the program first) runs ([`Session`]).
///
/// ```
/// use watchdog_host::claude_code::session::{session_of, Session};
/// assert_eq!(session_of(&["claude", "-p", "go"]), Session::New);
/// assert_eq!(session_of(&["claude", "-p", "go", "--resume", "s-1"]), Session::Resume("s-1"));
/// assert_eq!(session_of(&["claude", "--resume=s-1", "-p", "go"]), Session::Resume("s-1"));
/// assert_eq!(session_of(&["claude", "-r", "s-1", "-p", "go"]), Session::Resume("s-1"));
/// assert_eq!(session_of(&["claude", "--session-id", "s-2"]), Session::Given("s-2"));
/// assert_eq!(session_of(&["claude", "--resume", "s-1", "--fork-session"]), Session::Unknown);
/// assert_eq!(session_of(&["claude", "--continue", "-p", "go"]), Session::Unknown);
/// ```
pub fn session_of<S: AsRef<str>>(argv: &[S]) -> Session<'_> {
    let mut found: Vec<(&str, Option<&str>)> = Vec::new();
    let mut args = argv.iter().skip(1).map(AsRef::as_ref);
    while let Some(a) = args.next() {
        if a == "--" {
            break;
        }
        let Some((flag, takes_value, inline)) = session_flag(a) else {
            continue;
        };
        let value = match inline {
            // `--resume=<id>`; not `-r=<id>` (the value would be `=<id>`), nor `--continue=…`.
            Some(v) if takes_value && flag.starts_with("--") => Some(v),
            Some(_) => return Session::Unknown,
            None if takes_value => match args.next() {
                Some(v) if !v.starts_with('-') => Some(v),
                _ => return Session::Unknown,
            },
            None => None,
        };
        found.push((flag, value));
    }
    match found.as_slice() {
        [] => Session::New,
        [("--resume" | "-r", Some(id))] => Session::Resume(id),
        [("--session-id", Some(id))] => Session::Given(id),
        _ => Session::Unknown,
    }
}

/// Whether a command line asks Claude Code to read stream-json on stdin
/// (`--input-format stream-json` or `--input-format=stream-json`): the host's messages come on
/// its stdin, so after each `result` it may be waiting for the host's next one (and its prompt
/// is not on the command line). The one reading of this rule, for a live run, a capture's
/// `start` record and recovery's continuation alike.
///
/// ```
/// use watchdog_host::claude_code::session::reads_stream_json_input;
/// assert!(reads_stream_json_input(["claude", "-p", "--input-format", "stream-json"]));
/// assert!(reads_stream_json_input(["claude", "--input-format=stream-json"]));
/// assert!(!reads_stream_json_input(["claude", "-p", "hi", "--output-format", "stream-json"]));
/// ```
pub fn reads_stream_json_input<S: AsRef<str>>(argv: impl IntoIterator<Item = S>) -> bool {
    let mut prev_flag = false;
    for a in argv {
        let a = a.as_ref();
        if a == "--input-format=stream-json" || (prev_flag && a == "stream-json") {
            return true;
        }
        prev_flag = a == "--input-format";
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_session_flag_makes_the_session_unknown_or_named() {
        for (flag, takes_value) in SESSION_FLAGS {
            let mut argv = vec!["claude", "-p", "go", flag];
            if *takes_value {
                argv.push("s-1");
            }
            let got = session_of(&argv);
            match *flag {
                "--resume" | "-r" => assert_eq!(got, Session::Resume("s-1")),
                "--session-id" => assert_eq!(got, Session::Given("s-1")),
                _ => assert_eq!(got, Session::Unknown, "{flag}"),
            }
        }
        // A value flag without its value; two session flags; after `--`.
        assert_eq!(session_of(&["claude", "--resume"]), Session::Unknown);
        assert_eq!(session_of(&["claude", "--resume", "-p"]), Session::Unknown);
        assert_eq!(
            session_of(&["claude", "--resume", "a", "--session-id", "b"]),
            Session::Unknown
        );
        assert_eq!(session_of(&["claude", "-r=a"]), Session::Unknown);
        assert_eq!(session_of(&["claude", "--", "--resume", "a"]), Session::New);
        assert_eq!(session_of::<&str>(&[]), Session::New);
    }
}

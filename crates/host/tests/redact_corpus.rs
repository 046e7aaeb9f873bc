//! The redaction rule against a corpus of real secret shapes, each inside a `bash -c` string as
//! Claude Code's Bash tool runs it (and as a plain argument list), and against ordinary
//! commands, which must come out as they went in: a receipt that hides the command is useless.
//! The secrets are fakes of the real formats (lengths, alphabets, prefixes).

mod secret_corpus;

use secret_corpus::{ordinary_scripts, secret_scripts};
use watchdog_host::redact::{args, text, REDACTED};
use watchdog_host::tree::command_line;

#[test]
fn every_secret_of_the_corpus_is_redacted_inside_a_shell_string() {
    for (script, secrets) in secret_scripts() {
        let argv = ["bash", "-c", script.as_str()];
        let line = command_line(&argv);
        let whole = text(&script);
        for s in &secrets {
            assert!(!whole.contains(s), "{s} in {whole}");
            // The recorded line is bounded; what it keeps holds no part of a secret's value.
            assert!(!line.contains(s), "{s} in {line}");
            assert!(
                !line.contains(&s[..s.len().min(12)]),
                "{s} begins in {line}"
            );
        }
        assert!(whole.contains(REDACTED), "{whole}");
        // Redacting again changes nothing.
        assert_eq!(text(&whole), whole);
    }
}

/// `script`'s words as a shell hands them to a program: split at spaces outside quotes, the
/// quotes removed (no expansion).
fn shell_words(script: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    let mut any = false;
    for c in script.chars() {
        match (quote, c) {
            (None, ' ') => {
                if any {
                    words.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (_, c) => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(cur);
    }
    words
}

#[test]
fn the_same_secrets_as_separate_arguments_are_redacted_too() {
    for (script, secrets) in secret_scripts() {
        // As a program gets them: `bash -c` splits the script and removes the quotes.
        let argv = shell_words(&script);
        let shown = args(&argv).join(" ");
        for s in &secrets {
            assert!(!shown.contains(s), "{s} in {shown} ({argv:?})");
        }
    }
}

#[test]
fn ordinary_commands_are_kept_as_they_are() {
    for script in ordinary_scripts() {
        assert_eq!(text(script), script, "inside a string");
        let argv = shell_words(script);
        assert_eq!(args(&argv), argv, "as arguments");
    }
}

#[test]
fn what_is_left_around_a_secret_still_says_what_ran() {
    let (script, _) = &secret_scripts()[0];
    assert_eq!(
        text(script),
        "export GITHUB_TOKEN=*** && gh pr create --fill"
    );
    let (script, _) = &secret_scripts()[4];
    assert_eq!(
        text(script),
        "curl -s https://api.openai.com/v1/models -H \"Authorization: Bearer ***\""
    );
    let (script, _) = &secret_scripts()[9];
    assert_eq!(
        text(script),
        "psql postgresql://***@db.internal:5432/app -c 'select 1'"
    );
}

//! What looks like a secret in a command line, redacted: the one rule for everything the
//! watchdog records of a command (the process tree's command lines in samples, receipts,
//! captures, summaries, telemetry and stderr; the command a run ran).
//!
//! Redaction works inside text, not only per argument: Claude Code's Bash tool runs every
//! command as one `bash -c "…"` string, so a secret is as likely in the middle of an
//! argument as in one of its own. [`text`] redacts, wherever they are:
//!
//! - the value of an assignment or a header whose name says secret (`GITHUB_TOKEN=…`,
//!   `--api-key=…`, `"password": "…"`, `X-Api-Key: …`, `?access_token=…`), and the value
//!   after a flag named like one (`--password hunter2`, `--token "…"`);
//! - the credential of an `Authorization:` header (its scheme kept: `Bearer ***`) and of any
//!   `Bearer …`;
//! - a URL's user information (`https://***@host/…`), a Slack webhook's path;
//! - keys and tokens of well-known shapes, wherever they stand: GitHub (`ghp_`, `gho_`,
//!   `ghu_`, `ghs_`, `ghr_`, `github_pat_`), Anthropic (`sk-ant-`), OpenAI (`sk-`), Stripe
//!   (`sk_live_`, `rk_live_`, …), AWS access key ids (`AKIA…`, `ASIA…`), Slack (`xoxb-`,
//!   `xoxp-`, …), GitLab (`glpat-`), npm (`npm_`), Hugging Face (`hf_`), Google API keys
//!   (`AIza…`), JSON Web Tokens (`eyJ….eyJ….…`), PEM private keys.
//!
//! A name says secret when its last word is one (`token`, `secret`, `password`, `passwd`,
//! `passphrase`, `pass`, `credential`, `auth`, `authorization`, `cookie`, `apikey`,
//! `signature`; `pwd` and `pat` after another word; `key` after `api`, `access`, `secret`,
//! `private`, `client`, `signing`, `encryption`, `master`, `account`), or when it is one
//! word ending in `password`, `passwd`, `token`, `secret` or `apikey` (`PGPASSWORD`). Words
//! are split at `_`, `-`, `.` and lower-to-upper case. So the ordinary words around a secret
//! stay: `--max-tokens 100`, `--token-budget`, `--password-file ~/.pw`, `sort --key=2`,
//! `PWD=/home/me`, `--no-password`, a path, a host, `$GITHUB_TOKEN` (a reference, not a
//! value). What stands for a redacted value is [`REDACTED`]; redacting twice changes nothing.
//!
//! ```
//! use watchdog_host::redact::text;
//! assert_eq!(
//!     text("bash -c export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 && gh pr list"),
//!     "bash -c export GITHUB_TOKEN=*** && gh pr list"
//! );
//! assert_eq!(
//!     text(r#"curl -H "Authorization: Bearer abc.def" https://me:pw@example.com/x --token 's3cr t'"#),
//!     r#"curl -H "Authorization: Bearer ***" https://***@example.com/x --token '***'"#
//! );
//! assert_eq!(text("cargo build --release"), "cargo build --release");
//! ```

use std::borrow::Cow;

/// What stands for a redacted value.
pub const REDACTED: &str = "***";

/// Secrets inside `s` (one argument, a shell script, a whole command line), redacted; `s`
/// itself when there is none.
pub fn text(s: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(s);
    for pass in [private_keys, userinfo, assignments, bearer, shapes] {
        if let Some(changed) = pass(&out) {
            out = Cow::Owned(changed);
        }
    }
    out
}

/// Every argument of `argv` redacted ([`text`]), and the argument after a flag named like a
/// secret (`--token`, `--password`) replaced whole.
///
/// ```
/// use watchdog_host::redact::args;
/// assert_eq!(
///     args(&["mysql", "--password", "hunter2", "--max-tokens", "100"]),
///     ["mysql", "--password", "***", "--max-tokens", "100"]
/// );
/// ```
pub fn args<S: AsRef<str>>(argv: &[S]) -> Vec<String> {
    let mut before: Option<&str> = None;
    argv.iter()
        .map(|a| {
            let a = a.as_ref();
            let shown = match before {
                Some(b) if names_the_next(b, a) => REDACTED.to_owned(),
                // `curl -u user:password`: the password.
                Some("-u" | "--user") => match user_password(a) {
                    Some(colon) => format!("{}{REDACTED}", &a[..=colon]),
                    None => text(a).into_owned(),
                },
                _ => text(a).into_owned(),
            };
            before = Some(a);
            shown
        })
        .collect()
}

/// Whether `word` names the value that follows it, a secret: a flag without its value whose
/// name says secret (`--token`, `-password`), or a name of the kind tools take apart from
/// their value (`aws configure set aws_secret_access_key …`, `:_authToken …`: `_` in it),
/// followed by `value` that is no flag, no reference, and (for such a name) no word of prose.
fn names_the_next(word: &str, value: &str) -> bool {
    if value.starts_with('-') || is_reference(value) || !secret_name(word) {
        return false;
    }
    if word.starts_with('-') {
        return !word.contains('=');
    }
    let bare = word.trim_start_matches([':', '/']);
    bare.contains('_') && bare.bytes().all(name_char) && value.len() >= 8
}

/// In `user:password`, where the password starts, less one (the colon); `None` without one,
/// or when it is all digits (`--user 1000:1000`, a uid and a gid).
fn user_password(value: &str) -> Option<usize> {
    let colon = value.find(':')?;
    let pw = &value[colon + 1..];
    (!pw.is_empty() && !pw.bytes().all(|c| c.is_ascii_digit()) && pw != REDACTED).then_some(colon)
}

/// A reference to a variable (`$TOKEN`, `${TOKEN}`), not a value.
fn is_reference(value: &str) -> bool {
    let v = value.trim_start_matches(['"', '\'']);
    v.starts_with('$') && !v.starts_with("$(")
}

/// Whether `name` holds, in any case, a piece of every word [`secret_name`] looks for
/// (`tok`, `sec`, `sig`, `pas`, `pwd`, `pat`, `cred`, `cook`, `auth`, `key`): most words of a
/// command line do not, and are let go without splitting them. One pass, no allocation.
fn may_be_secret(name: &str) -> bool {
    let b = name.as_bytes();
    let at = |i: usize, piece: &[u8]| {
        b.get(i..i + piece.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(piece))
    };
    (0..b.len()).any(|i| match b[i].to_ascii_lowercase() {
        b't' => at(i + 1, b"ok"),
        b's' => at(i + 1, b"ec") || at(i + 1, b"ig"),
        b'p' => at(i + 1, b"as") || at(i + 1, b"wd") || at(i + 1, b"at"),
        b'c' => at(i + 1, b"red") || at(i + 1, b"ook"),
        b'a' => at(i + 1, b"uth"),
        b'k' => at(i + 1, b"ey"),
        _ => false,
    })
}

/// Whether `name` (a variable, a flag, a JSON key, a header) says its value is secret.
fn secret_name(name: &str) -> bool {
    if !may_be_secret(name) {
        return false;
    }
    let name = name.trim_start_matches('-').trim_matches(['"', '\'']);
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("no-") || lower.starts_with("no_") {
        return false;
    }
    let words = words(name);
    let Some(last) = words.last() else {
        return false;
    };
    let before = words.len().checked_sub(2).map(|i| words[i].as_str());
    const LAST: [&str; 13] = [
        "token",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "pass",
        "credential",
        "credentials",
        "auth",
        "authorization",
        "cookie",
        "apikey",
        "signature",
    ];
    const KEY_OF: [&str; 9] = [
        "api",
        "access",
        "secret",
        "private",
        "client",
        "signing",
        "encryption",
        "master",
        "account",
    ];
    const ONE_WORD_ENDS: [&str; 5] = ["password", "passwd", "token", "secret", "apikey"];
    LAST.contains(&last.as_str())
        || (before.is_some() && matches!(last.as_str(), "pwd" | "pat"))
        || (last == "key" && before.is_some_and(|b| KEY_OF.contains(&b)))
        || (words.len() == 1 && ONE_WORD_ENDS.iter().any(|e| last.ends_with(e)))
}

/// The words of a name, lower case: split at `_`, `-`, `.` and where lower case turns upper.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.') {
            words.extend((!cur.is_empty()).then(|| std::mem::take(&mut cur)));
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    words.extend((!cur.is_empty()).then_some(cur));
    words
}

/// A character of a name (a variable, a flag, a key, a header).
fn name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

/// Where an unquoted value ends: at a space or what ends a shell word.
fn value_end(c: u8, json: bool) -> bool {
    c.is_ascii_whitespace()
        || matches!(
            c,
            b'"' | b'\'' | b';' | b'&' | b'|' | b')' | b'<' | b'>' | b'`'
        )
        || (json && matches!(c, b',' | b'}'))
}

/// The end of the value starting at `at` in `s`: a quoted value up to its closing quote (the
/// quotes stay: `(start, end)` of what is replaced), else up to [`value_end`].
fn value_span(s: &[u8], at: usize, json: bool) -> (usize, usize) {
    match s.get(at) {
        Some(&q @ (b'"' | b'\'')) => {
            let end = s[at + 1..]
                .iter()
                .position(|&c| c == q)
                .map_or(s.len(), |i| at + 1 + i);
            (at + 1, end)
        }
        _ => {
            let end = s[at..]
                .iter()
                .position(|&c| value_end(c, json))
                .map_or(s.len(), |i| at + i);
            (at, end)
        }
    }
}

/// Replace `spans` (sorted, apart) of `s` with [`REDACTED`]; `None` when there are none.
fn replace(s: &str, spans: &[(usize, usize)]) -> Option<String> {
    if spans.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for &(a, b) in spans {
        out.push_str(&s[at..a]);
        out.push_str(REDACTED);
        at = b;
    }
    out.push_str(&s[at..]);
    (out != s).then_some(out)
}

/// Keep a span only when it hides something: not empty, not a redaction already, not a
/// reference to a variable.
fn worth(s: &str, (a, b): (usize, usize)) -> bool {
    a < b && &s[a..b] != REDACTED && !is_reference(&s[a..b])
}

/// The schemes of an `Authorization` header, kept before its credential.
const SCHEMES: [&str; 7] = [
    "bearer",
    "basic",
    "token",
    "digest",
    "negotiate",
    "bot",
    "aws4-hmac-sha256",
];

/// `NAME=value`, `NAME: value`, `"name": "value"` and `--flag value` where the name says
/// secret.
fn assignments(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !name_char(b[i]) || (i > 0 && name_char(b[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && name_char(b[i]) {
            i += 1;
        }
        let name = &s[start..i];
        let quoted_name = start > 0 && b[start - 1] == b'"' && b.get(i) == Some(&b'"');
        let mut j = i + usize::from(quoted_name);
        let flag = name.starts_with('-');
        if matches!(name, "-u" | "--user") && b.get(j) == Some(&b' ') {
            // `curl -u user:password`: the password.
            let (a, e) = value_span(b, j + 1, false);
            if let Some(colon) = user_password(&s[a..e]) {
                spans.push((a + colon + 1, e));
            }
            i = e.max(i);
            continue;
        }
        if !secret_name(name) {
            continue;
        }
        match b.get(j) {
            Some(b'=') => {
                let span = value_span(b, j + 1, false);
                if worth(s, span) {
                    spans.push(span);
                }
                i = span.1.max(i);
            }
            Some(b':') if !flag && b.get(j + 1) != Some(&b'/') => {
                j += 1;
                while b.get(j).is_some_and(|c| *c == b' ' || *c == b'\t') {
                    j += 1;
                }
                // `Authorization: Bearer x`: the scheme stays.
                let word_end = b[j..]
                    .iter()
                    .position(|c| c.is_ascii_whitespace() || matches!(c, b'"' | b'\''))
                    .map_or(b.len(), |k| j + k);
                let scheme = s[j..word_end].to_ascii_lowercase();
                if SCHEMES.contains(&scheme.as_str()) && b.get(word_end) == Some(&b' ') {
                    j = word_end + 1;
                }
                // A header's whole value: a cookie or a credential list has spaces and `;`.
                let lower = name.to_ascii_lowercase();
                let span = if !quoted_name
                    && (lower.ends_with("authorization") || lower.ends_with("cookie"))
                    && !matches!(b.get(j), Some(b'"' | b'\''))
                {
                    let end = b[j..]
                        .iter()
                        .position(|c| matches!(c, b'"' | b'\''))
                        .map_or(b.len(), |k| j + k);
                    (j, end)
                } else {
                    value_span(b, j, quoted_name)
                };
                if worth(s, span) {
                    spans.push(span);
                }
                i = span.1.max(i);
            }
            Some(b' ' | b'\t') => {
                while b.get(j).is_some_and(|c| *c == b' ' || *c == b'\t') {
                    j += 1;
                }
                let span = value_span(b, j, false);
                // The whole value, quotes included, decides whether it is one.
                let outer = (j, (span.1 + 1).min(b.len()).max(span.1));
                let value = if b.get(j).is_some_and(|c| matches!(c, b'"' | b'\'')) {
                    &s[outer.0..outer.1]
                } else {
                    &s[span.0..span.1]
                };
                if names_the_next(name, value) && worth(s, span) {
                    spans.push(span);
                    i = span.1.max(i);
                }
            }
            _ => {}
        }
    }
    replace(s, &spans)
}

/// The credential after `Bearer ` anywhere.
fn bearer(s: &str) -> Option<String> {
    let lower = s.to_ascii_lowercase();
    let b = s.as_bytes();
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(k) = lower[from..].find("bearer ") {
        let at = from + k;
        from = at + 7;
        if at > 0 && name_char(b[at - 1]) {
            continue;
        }
        let mut j = at + 7;
        while b.get(j) == Some(&b' ') {
            j += 1;
        }
        let span = value_span(b, j, false);
        // A credential, not a word of prose (`the bearer of bad news`).
        if worth(s, span) && span.1 - span.0 >= 8 {
            spans.push(span);
            from = span.1;
        }
    }
    replace(s, &spans)
}

/// The user information of every URL (`scheme://user:pw@host`).
fn userinfo(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(k) = s[from..].find("://") {
        let start = from + k + 3;
        let host_end = b[start..]
            .iter()
            .position(|&c| matches!(c, b'/' | b'?' | b'#') || value_end(c, false))
            .map_or(b.len(), |i| start + i);
        if let Some(at) = s[start..host_end].rfind('@') {
            if worth(s, (start, start + at)) {
                spans.push((start, start + at));
            }
        }
        from = host_end.max(start);
    }
    replace(s, &spans)
}

/// A PEM private key block, from its `-----BEGIN` to its `-----END …-----` (or the end).
fn private_keys(s: &str) -> Option<String> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(k) = s[from..].find("-----BEGIN ") {
        let start = from + k;
        let header_end = s[start + 11..].find("-----").map(|i| start + 11 + i);
        let Some(header_end) = header_end.filter(|&e| s[start..e].contains("PRIVATE KEY")) else {
            from = start + 11;
            continue;
        };
        let end = s[header_end + 5..]
            .find("-----END ")
            .and_then(|i| {
                let e = header_end + 5 + i + 9;
                s[e..].find("-----").map(|j| e + j + 5)
            })
            .unwrap_or(s.len());
        spans.push((start, end));
        from = end;
    }
    replace(s, &spans)
}

/// A token's shape: its prefix, the characters it goes on with, and how many at least.
struct Shape {
    prefix: &'static str,
    chars: fn(u8) -> bool,
    min: usize,
}

fn alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}
fn word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}
fn dashed(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-')
}
fn upper(c: u8) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit()
}
fn letter(c: u8) -> bool {
    c.is_ascii_alphabetic()
}

/// Well-known key and token shapes (longest prefixes first where they overlap).
const SHAPES: [Shape; 17] = [
    Shape {
        prefix: "github_pat_",
        chars: word,
        min: 20,
    },
    Shape {
        prefix: "ghp_",
        chars: alnum,
        min: 20,
    },
    Shape {
        prefix: "gho_",
        chars: alnum,
        min: 20,
    },
    Shape {
        prefix: "ghu_",
        chars: alnum,
        min: 20,
    },
    Shape {
        prefix: "ghs_",
        chars: alnum,
        min: 20,
    },
    Shape {
        prefix: "ghr_",
        chars: alnum,
        min: 20,
    },
    Shape {
        prefix: "sk-ant-",
        chars: dashed,
        min: 10,
    },
    Shape {
        prefix: "sk-",
        chars: dashed,
        min: 20,
    },
    Shape {
        prefix: "sk_live_",
        chars: alnum,
        min: 16,
    },
    Shape {
        prefix: "sk_test_",
        chars: alnum,
        min: 16,
    },
    Shape {
        prefix: "rk_live_",
        chars: alnum,
        min: 16,
    },
    Shape {
        prefix: "AKIA",
        chars: upper,
        min: 16,
    },
    Shape {
        prefix: "ASIA",
        chars: upper,
        min: 16,
    },
    Shape {
        prefix: "glpat-",
        chars: dashed,
        min: 20,
    },
    Shape {
        prefix: "npm_",
        chars: alnum,
        min: 36,
    },
    Shape {
        prefix: "hf_",
        chars: letter,
        min: 30,
    },
    Shape {
        prefix: "AIza",
        chars: dashed,
        min: 35,
    },
];

/// Keys and tokens of a well-known shape, Slack's (`xoxb-…`), JSON Web Tokens and Slack
/// webhook paths, wherever they stand.
fn shapes(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphanumeric() || (i > 0 && b[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        let run = |from: usize, ok: fn(u8) -> bool| {
            b[from..]
                .iter()
                .position(|&c| !ok(c))
                .map_or(b.len(), |k| from + k)
        };
        // Every shape begins with one of these.
        if !matches!(b[i], b'g' | b's' | b'r' | b'A' | b'x' | b'e' | b'h' | b'n') {
            i += 1;
            continue;
        }
        let rest = &s[i..];
        let mut found = None;
        for shape in &SHAPES {
            if rest.starts_with(shape.prefix) {
                let end = run(i + shape.prefix.len(), shape.chars);
                if end - i - shape.prefix.len() >= shape.min {
                    found = Some(end);
                }
                break;
            }
        }
        // Slack: xoxa-, xoxb-, xoxp-, xoxo-, xoxr-, xoxs-.
        if found.is_none()
            && rest.len() > 5
            && rest.starts_with("xox")
            && matches!(b[i + 3], b'a' | b'b' | b'p' | b'o' | b'r' | b's')
            && b[i + 4] == b'-'
        {
            let end = run(i + 5, dashed);
            found = (end - i - 5 >= 10).then_some(end);
        }
        // A JSON Web Token: three base64url parts, the first two JSON objects (`eyJ`).
        if found.is_none() && rest.starts_with("eyJ") {
            let b64 = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-');
            let p1 = run(i, b64);
            if b.get(p1) == Some(&b'.') && s[p1 + 1..].starts_with("eyJ") {
                let p2 = run(p1 + 1, b64);
                if b.get(p2) == Some(&b'.') {
                    let p3 = run(p2 + 1, b64);
                    found = (p3 > p2 + 1).then_some(p3);
                }
            }
        }
        if found.is_none() && rest.starts_with("hooks.slack.com/services/") {
            let start = i + "hooks.slack.com/services/".len();
            let end = b[start..]
                .iter()
                .position(|&c| value_end(c, false))
                .map_or(b.len(), |k| start + k);
            if worth(s, (start, end)) {
                spans.push((start, end));
            }
            i = end.max(i + 1);
            continue;
        }
        match found {
            Some(end) => {
                spans.push((i, end));
                i = end;
            }
            None => i += 1,
        }
    }
    replace(s, &spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_say_secret_and_names_that_do_not() {
        for n in [
            "GITHUB_TOKEN",
            "--token",
            "--api-key",
            "apiKey",
            "AWS_SECRET_ACCESS_KEY",
            "PGPASSWORD",
            "MYSQL_PWD",
            "DB_PASS",
            "--password",
            "client_secret",
            "X-Api-Key",
            "Authorization",
            "access_token",
            "GH_PAT",
            "NPM_AUTH",
            "X-Amz-Signature",
        ] {
            assert!(secret_name(n), "{n}");
        }
        for n in [
            "--max-tokens",
            "max_tokens",
            "--token-budget",
            "--password-file",
            "--key",
            "PWD",
            "OLDPWD",
            "--no-password",
            "TOKENIZERS_PARALLELISM",
            "compass",
            "bypass",
            "--pass-through",
            "GIT_ASKPASS",
            "--session-id",
            "--author",
            "keyboard",
            "--auth-type",
        ] {
            assert!(!secret_name(n), "{n}");
        }
    }

    #[test]
    fn redacting_twice_changes_nothing() {
        let s = "export A_TOKEN=x && curl -H 'Authorization: Basic dXNlcg==' https://u:p@h/ \
                 ghp_abcdefghijklmnopqrstuvwxyz0123456789 --password 'a b'";
        let once = text(s).into_owned();
        assert_eq!(text(&once), once);
        assert!(!once.contains("dXNlcg") && !once.contains("u:p@") && !once.contains("a b"));
    }
}

//! Where a shared ledger lives: the `--ledger` URL ([`LedgerUrl`]), checked and shown without
//! its password.

use std::fmt;
use std::str::FromStr;

/// The kind of server a [`LedgerUrl`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LedgerBackend {
    /// Redis (`redis://`): a marker is created with `SET … NX`, no expiry.
    Redis,
    /// PostgreSQL (`postgres://`, `postgresql://`): a marker is a row created with
    /// `INSERT … ON CONFLICT DO NOTHING`.
    Postgres,
}

impl LedgerBackend {
    /// `redis` or `postgres`.
    pub fn as_str(self) -> &'static str {
        match self {
            LedgerBackend::Redis => "redis",
            LedgerBackend::Postgres => "postgres",
        }
    }
}

impl fmt::Display for LedgerBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--ledger` value that is not a ledger URL. Its text never holds the password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid ledger URL {shown}: {why}")]
pub struct LedgerUrlError {
    shown: String,
    why: &'static str,
}

impl LedgerUrlError {
    /// The rejected value, quoted, its password hidden.
    pub fn shown(&self) -> &str {
        &self.shown
    }
    /// What is wrong with it.
    pub fn why(&self) -> &'static str {
        self.why
    }
}

/// The URL of a shared ledger: `redis://[user:password@]host[:port][/db]` or
/// `postgres://[user:password@]host[:port]/dbname[?…]` (also `postgresql://`).
///
/// Its [`Display`](fmt::Display) and [`Debug`](fmt::Debug) forms are [`LedgerUrl::redacted`]:
/// the password (in the user info, or a `password=` parameter) is `***`, so a URL can be put in
/// a log line, an error or a summary as it is. Only [`LedgerUrl::secret`] gives the full text,
/// for the client that connects.
///
/// ```
/// use watchdog_host::ledger_url::{LedgerBackend, LedgerUrl};
/// let url: LedgerUrl = "redis://fleet:s3cret@10.0.0.7:6379/2".parse().unwrap();
/// assert_eq!(url.backend(), LedgerBackend::Redis);
/// assert_eq!(url.to_string(), "redis://fleet:***@10.0.0.7:6379/2");
/// assert!(!format!("{url:?}").contains("s3cret"));
/// let pg: LedgerUrl = "postgresql://db.internal/fleet?password=hunter2".parse().unwrap();
/// assert_eq!(pg.to_string(), "postgresql://db.internal/fleet?password=***");
/// let bad = "mysql://root:pw@db/x".parse::<LedgerUrl>().unwrap_err().to_string();
/// assert!(bad.contains("mysql://root:***@db/x") && !bad.contains("pw@"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct LedgerUrl {
    backend: LedgerBackend,
    text: String,
}

impl LedgerUrl {
    /// What a ledger URL may be, in words (the range `--ledger` states).
    pub const ALLOWED: &str = "a redis://, postgres:// or postgresql:// URL";

    /// Check `text`: a known scheme and a host. Whitespace around it is ignored.
    pub fn parse(text: &str) -> Result<LedgerUrl, LedgerUrlError> {
        let text = text.trim();
        let err = |why| LedgerUrlError {
            shown: format!("{:?}", redact(text)),
            why,
        };
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(err("expected redis://…, postgres://… or postgresql://…"));
        };
        let backend = match scheme.to_ascii_lowercase().as_str() {
            "redis" => LedgerBackend::Redis,
            "postgres" | "postgresql" => LedgerBackend::Postgres,
            "rediss" => {
                return Err(err(
                    "TLS (rediss://) is not supported by this build; use redis:// on a \
                     trusted network or a TLS tunnel",
                ))
            }
            _ => {
                return Err(err(
                    "unknown scheme: expected redis, postgres or postgresql",
                ))
            }
        };
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if host.is_empty() || host.starts_with(':') {
            return Err(err("no host"));
        }
        if text.chars().any(char::is_control) {
            return Err(err("control characters in the URL"));
        }
        Ok(LedgerUrl {
            backend,
            text: text.to_owned(),
        })
    }

    /// The server kind.
    pub fn backend(&self) -> LedgerBackend {
        self.backend
    }

    /// The URL without its password (`***` in its place): safe for logs and summaries.
    pub fn redacted(&self) -> String {
        redact(&self.text)
    }

    /// The full URL, password included: for the client that connects, never for a message.
    pub fn secret(&self) -> &str {
        &self.text
    }

    /// `text` (a client's error, say) with every occurrence of this URL's password replaced by
    /// `***`: a message may quote what a server or a client library said, never the password.
    ///
    /// ```
    /// use watchdog_host::ledger_url::LedgerUrl;
    /// let url: LedgerUrl = "redis://u:hunter2@h".parse().unwrap();
    /// assert_eq!(url.scrub("auth hunter2 failed"), "auth *** failed");
    /// ```
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.replace(&self.text, &self.redacted());
        for secret in passwords(&self.text) {
            if !secret.is_empty() {
                out = out.replace(secret, "***");
            }
        }
        out
    }
}

/// The passwords `text` carries: in its user info, and in `password=` parameters.
fn passwords(text: &str) -> Vec<&str> {
    let rest = text.split_once("://").map_or(text, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let mut found = Vec::new();
    if let Some((user_info, _)) = authority.rsplit_once('@') {
        if let Some((_, password)) = user_info.split_once(':') {
            found.push(password);
        }
    }
    if let Some((_, query)) = tail.split_once('?') {
        for p in query.split(['&', '#']) {
            if let Some((k, v)) = p.split_once('=') {
                if k.eq_ignore_ascii_case("password") {
                    found.push(v);
                }
            }
        }
    }
    found
}

impl FromStr for LedgerUrl {
    type Err = LedgerUrlError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LedgerUrl::parse(s)
    }
}

impl fmt::Display for LedgerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for LedgerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LedgerUrl({})", self.redacted())
    }
}

/// `text` with the password of its user info and of any `password=` parameter replaced by
/// `***`. Any text is accepted (a malformed URL is redacted as far as it can be read).
fn redact(text: &str) -> String {
    let (head, rest) = match text.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), text),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{host}"),
            None => format!("{user_info}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{head}{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_password_survives_in_any_shown_form() {
        let cases = [
            ("redis://:pw1@h:6379", "redis://:***@h:6379"),
            ("redis://u:pw1@h", "redis://u:***@h"),
            ("redis://u@h/3", "redis://u@h/3"),
            ("redis://h", "redis://h"),
            (
                "postgres://u:pw1@h:5/d?sslmode=disable",
                "postgres://u:***@h:5/d?sslmode=disable",
            ),
            (
                "postgres://u@h/d?application_name=a&PASSWORD=pw1",
                "postgres://u@h/d?application_name=a&PASSWORD=***",
            ),
            // A password with '@' or ':' in it (unencoded): everything before the last '@'.
            ("redis://u:p@w:1@h", "redis://u:***@h"),
        ];
        for (url, shown) in cases {
            let u = LedgerUrl::parse(url).unwrap();
            assert_eq!(u.to_string(), shown, "{url}");
            assert!(!format!("{u:?}").contains("pw1"), "{url}");
            assert_eq!(u.secret(), url);
        }
    }

    #[test]
    fn a_bad_url_is_refused_with_its_password_hidden() {
        for bad in [
            "",
            "   ",
            "/var/lib/ledger",
            "file:///tmp/x",
            "mysql://u:pw1@h/d",
            "rediss://u:pw1@h",
            "redis://",
            "redis://u:pw1@",
            "redis://:6379",
            "postgres:///only-a-socket-path",
            "redis://h\n",
        ] {
            let e = LedgerUrl::parse(bad);
            // "redis://h\n" is trimmed, and fine.
            if bad == "redis://h\n" {
                assert!(e.is_ok());
                continue;
            }
            let e = e.expect_err(bad).to_string();
            assert!(!e.contains("pw1"), "{e}");
            assert!(e.starts_with("invalid ledger URL"), "{e}");
        }
        assert!(LedgerUrl::parse("redis://h/0\u{7}").is_err());
    }

    #[test]
    fn schemes_are_case_insensitive_and_kept() {
        let u = LedgerUrl::parse("POSTGRESQL://h/d").unwrap();
        assert_eq!(u.backend(), LedgerBackend::Postgres);
        assert_eq!(u.secret(), "POSTGRESQL://h/d");
        assert_eq!(
            LedgerUrl::parse("Redis://h").unwrap().backend().as_str(),
            "redis"
        );
    }
}

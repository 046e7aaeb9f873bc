//! Show a known, repeated warning once and count the rest.
//!
//! The Agent SDK warns `CLAUDE_SDK_CAN_USE_TOOL_SHADOWED` on every query that passes
//! `canUseTool` beside bare tool names in `allowedTools`; when that is on purpose, the same
//! warning repeats forever. In Rust, repeated warnings come from two places, and this module
//! serves both:
//!
//! - warnings with a code, raised by the host itself: [`WarningFilter::check`], and, behind the
//!   `tracing` feature, a `tracing_subscriber` layer (`WarningLayer`) for events carrying a
//!   `code` field;
//! - recognisable lines on the child CLI's stderr: [`StderrFilter::check`].
//!
//! Each returns a [`WarningDecision`]; the caller decides what to print.
//!
//! ```
//! use watchdog_host::warning_filter::{WarningDecision, WarningFilter, SHADOWED_CODE};
//! let mut f = WarningFilter::default();
//! assert_eq!(f.check(SHADOWED_CODE), WarningDecision::First);
//! assert_eq!(f.check(SHADOWED_CODE), WarningDecision::Suppressed { count: 1 });
//! assert_eq!(f.check("OTHER"), WarningDecision::Pass);
//! assert_eq!(f.summary().to_string(), "CLAUDE_SDK_CAN_USE_TOOL_SHADOWED: 1 repeat suppressed");
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

#[cfg(feature = "tracing")]
mod tracing_layer;
#[cfg(feature = "tracing")]
pub use tracing_layer::{install, WarningLayer};

/// The SDK's warning about `canUseTool` shadowed by bare `allowedTools` entries.
pub const SHADOWED_CODE: &str = "CLAUDE_SDK_CAN_USE_TOOL_SHADOWED";

/// What to do with one warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WarningDecision {
    /// The first warning of a listed code: show it.
    First,
    /// A repeat of a listed code: swallow it. `count` is how many of this code were swallowed
    /// so far, this one included.
    Suppressed {
        /// Repeats swallowed so far, this one included.
        count: u64,
    },
    /// Not a listed code: show it, untouched.
    Pass,
}

impl WarningDecision {
    /// Whether the warning should be shown (`First` or `Pass`).
    pub fn shows(self) -> bool {
        !matches!(self, WarningDecision::Suppressed { .. })
    }
}

/// Suppressed counts per code, in code order, codes with no repeat left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary(pub Vec<(String, u64)>);

impl Summary {
    /// Whether nothing was suppressed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Total repeats suppressed.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }
}

/// `CODE: 3 repeats suppressed; OTHER: 1 repeat suppressed`, or empty.
impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (code, n)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            let s = if *n == 1 { "" } else { "s" };
            write!(f, "{code}: {n} repeat{s} suppressed")?;
        }
        Ok(())
    }
}

type OnFirst = Box<dyn FnMut(&str, &str) + Send>;

/// Once-per-code de-duplication of warnings.
///
/// # Default
///
/// | option | default | rule |
/// |---|---|---|
/// | `codes` | `[`[`SHADOWED_CODE`]`]` | the codes whose repeats are swallowed |
/// | `on_first` | none | called with `(code, message)` for the first warning of each listed code; a panic inside it is caught and counted, never propagated |
pub struct WarningFilter {
    codes: Vec<String>,
    /// Listed codes seen at least once → repeats swallowed.
    seen: BTreeMap<String, u64>,
    on_first: Option<OnFirst>,
    callback_panics: u64,
}

impl fmt::Debug for WarningFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WarningFilter")
            .field("codes", &self.codes)
            .field("seen", &self.seen)
            .field("on_first", &self.on_first.is_some())
            .field("callback_panics", &self.callback_panics)
            .finish()
    }
}

impl Default for WarningFilter {
    fn default() -> Self {
        WarningFilter::with_codes([SHADOWED_CODE])
    }
}

impl WarningFilter {
    /// A filter for these codes (replacing the default list).
    pub fn with_codes<I, S>(codes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        WarningFilter {
            codes: codes.into_iter().map(Into::into).collect(),
            seen: BTreeMap::new(),
            on_first: None,
            callback_panics: 0,
        }
    }

    /// Call `f(code, message)` with the first warning of each listed code. A panic inside `f`
    /// is caught (the process panic hook still runs) and counted in
    /// [`callback_panics`](Self::callback_panics).
    pub fn on_first(mut self, f: impl FnMut(&str, &str) + Send + 'static) -> Self {
        self.on_first = Some(Box::new(f));
        self
    }

    /// The listed codes.
    pub fn codes(&self) -> &[String] {
        &self.codes
    }

    /// Whether `code` is listed.
    pub fn is_listed(&self, code: &str) -> bool {
        self.codes.iter().any(|c| c == code)
    }

    /// The decision on one warning of `code`.
    pub fn check(&mut self, code: &str) -> WarningDecision {
        self.check_warning(code, "")
    }

    /// The decision on one warning of `code` with its text (passed to `on_first`).
    pub fn check_warning(&mut self, code: &str, message: &str) -> WarningDecision {
        if !self.is_listed(code) {
            return WarningDecision::Pass;
        }
        if let Some(n) = self.seen.get_mut(code) {
            *n += 1;
            return WarningDecision::Suppressed { count: *n };
        }
        self.seen.insert(code.to_owned(), 0);
        if let Some(cb) = self.on_first.as_mut() {
            if catch_unwind(AssertUnwindSafe(|| cb(code, message))).is_err() {
                self.callback_panics += 1;
            }
        }
        WarningDecision::First
    }

    /// Repeats of `code` swallowed so far.
    pub fn suppressed(&self, code: &str) -> u64 {
        self.seen.get(code).copied().unwrap_or(0)
    }

    /// Suppressed counts per code.
    pub fn summary(&self) -> Summary {
        Summary(
            self.seen
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(c, n)| (c.clone(), *n))
                .collect(),
        )
    }

    /// How many times `on_first` panicked.
    pub fn callback_panics(&self) -> u64 {
        self.callback_panics
    }
}

/// How a [`StderrFilter`] rule recognises a line. Plain text, no regular expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// The line (leading whitespace ignored) starts with this text.
    Prefix(String),
    /// The line contains this text.
    Contains(String),
}

impl Pattern {
    /// Whether `line` matches.
    pub fn matches(&self, line: &str) -> bool {
        match self {
            Pattern::Prefix(p) => line.trim_start().starts_with(p.as_str()),
            Pattern::Contains(p) => line.contains(p.as_str()),
        }
    }
}

/// Shows a known noisy line of the child CLI's stderr once and counts the rest.
///
/// # Default
///
/// No rules: every line passes. Add one rule per known warning with
/// [`with_rule`](Self::with_rule); the first matching rule names the line's code.
///
/// ```
/// use watchdog_host::warning_filter::{Pattern, StderrFilter, WarningDecision};
/// let mut f = StderrFilter::default()
///     .with_rule("MCP_SLOW", Pattern::Contains("MCP server is slow".into()));
/// assert_eq!(f.check("warn: MCP server is slow (3 s)"), WarningDecision::First);
/// assert_eq!(f.check("warn: MCP server is slow (4 s)"), WarningDecision::Suppressed { count: 1 });
/// assert_eq!(f.check("something else"), WarningDecision::Pass);
/// ```
#[derive(Debug, Default)]
pub struct StderrFilter {
    rules: Vec<(String, Pattern)>,
    filter: Option<WarningFilter>,
}

impl StderrFilter {
    /// Add a rule: lines matching `pattern` are warnings of `code`.
    pub fn with_rule(mut self, code: impl Into<String>, pattern: Pattern) -> Self {
        let code = code.into();
        let filter = self
            .filter
            .get_or_insert_with(|| WarningFilter::with_codes(Vec::<String>::new()));
        if !filter.is_listed(&code) {
            filter.codes.push(code.clone());
        }
        self.rules.push((code, pattern));
        self
    }

    /// Call `f(code, line)` with the first line of each code (panics caught).
    pub fn on_first(mut self, f: impl FnMut(&str, &str) + Send + 'static) -> Self {
        let filter = self
            .filter
            .take()
            .unwrap_or_else(|| WarningFilter::with_codes(Vec::<String>::new()));
        self.filter = Some(filter.on_first(f));
        self
    }

    /// The code of the first rule matching `line`, if any.
    pub fn code_of(&self, line: &str) -> Option<&str> {
        self.rules
            .iter()
            .find(|(_, p)| p.matches(line))
            .map(|(c, _)| c.as_str())
    }

    /// The decision on one stderr line (a trailing newline is ignored).
    pub fn check(&mut self, line: &str) -> WarningDecision {
        let line = line.trim_end_matches(['\n', '\r']);
        let Some(code) = self.code_of(line).map(str::to_owned) else {
            return WarningDecision::Pass;
        };
        match self.filter.as_mut() {
            Some(f) => f.check_warning(&code, line),
            None => WarningDecision::Pass,
        }
    }

    /// Repeats of `code` swallowed so far.
    pub fn suppressed(&self, code: &str) -> u64 {
        self.filter.as_ref().map_or(0, |f| f.suppressed(code))
    }

    /// Suppressed counts per code.
    pub fn summary(&self) -> Summary {
        self.filter
            .as_ref()
            .map_or_else(Summary::default, WarningFilter::summary)
    }
}

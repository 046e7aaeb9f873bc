//! What an option is: its value's kind and rule, its default, who reads it ([`OptionSpec`]).

use crate::ledger_url::LedgerUrl;
use watchdog_core::config::{
    ByteSize, Factor, Fraction, HumanDuration, InvalidValue, NonZeroFraction, PositiveDuration,
};

/// The prefix of every environment variable the watchdog reads.
pub const ENV_PREFIX: &str = "AGENT_WATCHDOG_";

/// What an option's value is, and so which rule parses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ValueKind {
    /// A duration > 0 ([`PositiveDuration`]).
    PositiveDuration,
    /// Any duration, 0 included ([`HumanDuration`](watchdog_core::config::HumanDuration)).
    Duration,
    /// A finite number ≥ 1 ([`Factor`]).
    Factor,
    /// A number in [0, 1] ([`Fraction`]).
    Fraction,
    /// A number in (0, 1] ([`NonZeroFraction`]).
    NonZeroFraction,
    /// An on/off switch: a flag without a value; as a variable `1`/`0`, `true`/`false`,
    /// `yes`/`no`, `on`/`off` (also `y`/`n`, `t`/`f`), in any case.
    Switch,
    /// A file or directory.
    Path,
    /// Names separated by commas (blank ones are dropped).
    List,
    /// A whole number of milliseconds > 0 (the unit of the `OTEL_*` intervals).
    Milliseconds,
    /// A size in bytes > 0, with an optional unit ([`ByteSize`]).
    Size,
    /// A shared ledger's URL ([`LedgerUrl`]); shown without its password.
    LedgerUrl,
}

/// The words a [`ValueKind::Switch`] reads as on (in any case; clap's boolish words).
pub const SWITCH_ON: [&str; 6] = ["y", "yes", "t", "true", "on", "1"];
/// The words a [`ValueKind::Switch`] reads as off (in any case).
pub const SWITCH_OFF: [&str; 6] = ["n", "no", "f", "false", "off", "0"];

/// A switch's value as text: `Some(true)` for [`SWITCH_ON`], `Some(false)` for
/// [`SWITCH_OFF`], in any case and trimmed; `None` for anything else.
///
/// ```
/// use watchdog_host::options::parse_switch;
/// assert_eq!(parse_switch(" Yes"), Some(true));
/// assert_eq!(parse_switch("0"), Some(false));
/// assert_eq!(parse_switch("maybe"), None);
/// ```
pub fn parse_switch(text: &str) -> Option<bool> {
    let t = text.trim().to_ascii_lowercase();
    if SWITCH_ON.contains(&t.as_str()) {
        Some(true)
    } else if SWITCH_OFF.contains(&t.as_str()) {
        Some(false)
    } else {
        None
    }
}

impl ValueKind {
    /// The allowed range, in the words of the value's rule (`a duration > 0`).
    pub const fn range(self) -> &'static str {
        match self {
            ValueKind::PositiveDuration => PositiveDuration::ALLOWED,
            ValueKind::Duration => "a duration >= 0",
            ValueKind::Factor => Factor::ALLOWED,
            ValueKind::Fraction => Fraction::ALLOWED,
            ValueKind::NonZeroFraction => NonZeroFraction::ALLOWED,
            ValueKind::Switch => "a switch (1/0, true/false, yes/no, on/off)",
            ValueKind::Path => "a path",
            ValueKind::List => "comma-separated names",
            ValueKind::Milliseconds => "a whole number of milliseconds > 0",
            ValueKind::Size => ByteSize::ALLOWED,
            ValueKind::LedgerUrl => LedgerUrl::ALLOWED,
        }
    }

    /// Check `text` against the rule: the parser the command line uses for this kind.
    ///
    /// ```
    /// use watchdog_host::options::ValueKind;
    /// assert!(ValueKind::Duration.check("0s").is_ok());
    /// assert!(ValueKind::PositiveDuration.check("0s").is_err());
    /// assert!(ValueKind::Switch.check("On").is_ok());
    /// assert!(ValueKind::Switch.check("maybe").is_err());
    /// ```
    pub fn check(self, text: &str) -> Result<(), InvalidValue> {
        match self {
            ValueKind::PositiveDuration => text.parse::<PositiveDuration>().map(drop),
            ValueKind::Duration => text
                .parse::<HumanDuration>()
                .map(HumanDuration::get)
                .map(drop),
            ValueKind::Factor => text.parse::<Factor>().map(drop),
            ValueKind::Fraction => text.parse::<Fraction>().map(drop),
            ValueKind::NonZeroFraction => text.parse::<NonZeroFraction>().map(drop),
            ValueKind::Switch => match parse_switch(text) {
                Some(_) => Ok(()),
                None => Err(InvalidValue {
                    allowed: self.range(),
                    value: format!("{text:?}"),
                }),
            },
            ValueKind::Path | ValueKind::List => Ok(()),
            ValueKind::Size => text.parse::<ByteSize>().map(drop),
            ValueKind::LedgerUrl => match LedgerUrl::parse(text) {
                Ok(_) => Ok(()),
                // The error shows the URL without its password.
                Err(e) => Err(InvalidValue {
                    allowed: self.range(),
                    value: format!("{} ({})", e.shown(), e.why()),
                }),
            },
            ValueKind::Milliseconds => match text.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(()),
                _ => Err(InvalidValue {
                    allowed: self.range(),
                    value: format!("{text:?}"),
                }),
            },
        }
    }
}

/// An option's value when it is not given.
#[derive(Debug, Clone, Copy)]
pub enum OptionDefault {
    /// The typed default this function renders as the option's parser reads it (`10m`);
    /// `None` when the typed default is no value (no ceiling, no memory guard).
    Value(fn() -> Option<String>),
    /// No value: a switch is off, a file is not written.
    Unset,
    /// Decided when the watchdog runs, as described (`$XDG_STATE_HOME/agent-watchdog`).
    Described(&'static str),
}

/// Which part of the watchdog reads an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reader {
    /// `agent-watchdog run`: the flag, else the variable.
    Run,
    /// `agent-watchdog replay` and `audit`: the flag, else the variable.
    ReplayAudit,
    /// `claude-watchdog`, the drop-in: the variable only.
    DropIn,
    /// `agent-watchdog hook` (and the plugin that runs it): the variable, read leniently.
    Hook,
    /// The telemetry export of `run` and the drop-in: the variable only, read leniently (a bad
    /// value is one warning and the default; it never stops the run).
    Telemetry,
}

/// One user-facing option.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct OptionSpec {
    /// The name, in snake case (`no_progress`); the helpers' key.
    pub name: &'static str,
    /// The long flag without `--` (`no-progress`); `None` for a variable without a flag.
    pub flag: Option<&'static str>,
    /// The environment variable (`AGENT_WATCHDOG_NO_PROGRESS`).
    pub env: &'static str,
    /// The value's placeholder in the help (`DURATION`); `None` for a switch.
    pub value_name: Option<&'static str>,
    /// The value's type, and so its rule.
    pub kind: ValueKind,
    /// The value when it is not given.
    pub default: OptionDefault,
    /// One line of help, as `--help` shows it.
    pub help: &'static str,
    /// Who reads it.
    pub read_by: &'static [Reader],
}

impl OptionSpec {
    /// The allowed range ([`ValueKind::range`]).
    pub const fn range(&self) -> &'static str {
        self.kind.range()
    }

    /// Whether `reader` reads this option.
    pub fn is_read_by(&self, reader: Reader) -> bool {
        self.read_by.contains(&reader)
    }
}

//! The one table of user-facing options: each option's flag, environment variable, value
//! type, default, range and help, as plain data ([`OPTIONS`]).
//!
//! The command line builds its flags from it (names, variables, defaults, help), the drop-in
//! reads its `AGENT_WATCHDOG_*` variables through the same flags, and the tests check the
//! tables of docs/cli.md and the Python and npm helpers against it. A default is the text the
//! option's parser reads ([`ValueKind::check`]); the core's tests check that it is the value
//! of [`defaults`](super::defaults).
//!
//! ```
//! use watchdog_core::config::options::{self, OptionDefault, ValueKind};
//! let idle = options::find("idle").unwrap();
//! assert_eq!(idle.flag, Some("idle"));
//! assert_eq!(idle.env, "AGENT_WATCHDOG_IDLE");
//! assert_eq!(idle.kind, ValueKind::PositiveDuration);
//! assert_eq!(idle.default, OptionDefault::Value("10m"));
//! assert_eq!(idle.range(), "a duration > 0");
//! assert!(idle.kind.check("0s").is_err());
//! // Every variable is the prefix and the name in capitals.
//! for o in options::OPTIONS {
//!     assert_eq!(o.env, format!("{}{}", options::ENV_PREFIX, o.name.to_uppercase()));
//! }
//! ```

use super::values::{
    parse_duration, Factor, Fraction, InvalidValue, NonZeroFraction, PositiveDuration,
};

/// The prefix of every environment variable the watchdog reads.
pub const ENV_PREFIX: &str = "AGENT_WATCHDOG_";

/// What an option's value is, and so which rule parses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ValueKind {
    /// A duration > 0 ([`PositiveDuration`]).
    PositiveDuration,
    /// Any duration, 0 included ([`HumanDuration`](super::HumanDuration)).
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
    /// A size in bytes > 0, with an optional unit ([`ByteSize`](super::ByteSize)).
    Size,
    /// A shared ledger's URL ([`LedgerUrl`](crate::recovery::LedgerUrl)); shown without its
    /// password.
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
/// use watchdog_core::config::options::parse_switch;
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
            ValueKind::Size => super::ByteSize::ALLOWED,
            ValueKind::LedgerUrl => crate::recovery::LEDGER_URL_ALLOWED,
        }
    }

    /// Check `text` against the rule: the parser the command line uses for this kind.
    ///
    /// ```
    /// use watchdog_core::config::options::ValueKind;
    /// assert!(ValueKind::Duration.check("0s").is_ok());
    /// assert!(ValueKind::PositiveDuration.check("0s").is_err());
    /// assert!(ValueKind::Switch.check("On").is_ok());
    /// assert!(ValueKind::Switch.check("maybe").is_err());
    /// ```
    pub fn check(self, text: &str) -> Result<(), InvalidValue> {
        match self {
            ValueKind::PositiveDuration => text.parse::<PositiveDuration>().map(drop),
            ValueKind::Duration => parse_duration(text).map(drop),
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
            ValueKind::Size => text.parse::<super::ByteSize>().map(drop),
            ValueKind::LedgerUrl => match crate::recovery::LedgerUrl::parse(text) {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OptionDefault {
    /// This value, as the option's parser reads it (`10m`).
    Value(&'static str),
    /// No value: a switch is off, a limit does not apply, a file is not written.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

    /// The default as the docs write it: the value, `off` for an unset switch, `none` for any
    /// other unset option, or the description.
    ///
    /// ```
    /// use watchdog_core::config::options;
    /// assert_eq!(options::find("ceiling").unwrap().default_text(), "none");
    /// assert_eq!(options::find("strict").unwrap().default_text(), "off");
    /// assert_eq!(options::find("grace").unwrap().default_text(), "5s");
    /// ```
    pub const fn default_text(&self) -> &'static str {
        match self.default {
            OptionDefault::Value(v) | OptionDefault::Described(v) => v,
            OptionDefault::Unset => match self.kind {
                ValueKind::Switch => "off",
                _ => "none",
            },
        }
    }

    /// Whether `reader` reads this option.
    pub fn is_read_by(&self, reader: Reader) -> bool {
        self.read_by.contains(&reader)
    }
}

/// The option named `name` (snake case).
pub fn find(name: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.name == name)
}

/// The option whose long flag is `flag` (without `--`).
pub fn by_flag(flag: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.flag == Some(flag))
}

/// The option read from the environment variable `env`.
pub fn by_env(env: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.env == env)
}

const POLICY: &[Reader] = &[Reader::Run, Reader::ReplayAudit, Reader::DropIn];
const REPORT: &[Reader] = &[Reader::Run, Reader::DropIn];
const RUN: &[Reader] = &[Reader::Run];
const RUN_AND_HOOK: &[Reader] = &[Reader::Run, Reader::Hook];

macro_rules! options {
    ($(
        $(#[$doc:meta])*
        $id:ident = {
            name: $name:literal,
            flag: $flag:expr,
            value_name: $value_name:expr,
            kind: $kind:ident,
            default: $default:expr,
            read_by: $read_by:expr,
            help: $help:expr $(,)?
        }
    )*) => {
        $(
            $(#[$doc])*
            pub const $id: OptionSpec = OptionSpec {
                name: $name,
                flag: $flag,
                env: concat!("AGENT_WATCHDOG_", stringify!($id)),
                value_name: $value_name,
                kind: ValueKind::$kind,
                default: $default,
                help: $help,
                read_by: $read_by,
            };
        )*
        /// Every user-facing option, in the order of `run --help` (the variables without a
        /// flag last).
        pub const OPTIONS: &[OptionSpec] = &[$($id),*];
    };
}

use OptionDefault::{Described, Unset, Value};

options! {
    /// `--idle`: the base idle patience.
    IDLE = {
        name: "idle", flag: Some("idle"), value_name: Some("DURATION"), kind: PositiveDuration,
        default: Value("10m"), read_by: POLICY,
        help: "Idle patience: no stdout line for this long → kill `idle`. Until the first \
               completed write tool and while rate-limit utilization is high, patience is \
               idle × extend-factor. Every duration is at most 365d",
    }
    /// `--extend-factor`: the patience multiplier.
    EXTEND_FACTOR = {
        name: "extend_factor", flag: Some("extend-factor"), value_name: Some("FACTOR"),
        kind: Factor, default: Value("2"), read_by: POLICY,
        help: "Patience multiplier before the first completed write and at high utilization",
    }
    /// `--startup`: the limit before the first line.
    STARTUP = {
        name: "startup", flag: Some("startup"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Value("3m"), read_by: POLICY,
        help: "No line at all since start → kill `startup`",
    }
    /// `--no-progress`: the limit on keep-alives without progress.
    NO_PROGRESS = {
        name: "no_progress", flag: Some("no-progress"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Value("30m"), read_by: POLICY,
        help: "Keep-alives only (pings, heartbeats) for this long → kill `no_progress`; an \
               outstanding MCP call gets until Claude Code's own abort plus one heartbeat tick",
    }
    /// `--linger`: the wait after a `result`.
    LINGER = {
        name: "linger", flag: Some("linger"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Value("11m"), read_by: POLICY,
        help: "After a result, nothing new and the stream still open → kill `linger`",
    }
    /// `--ceiling`: the total age limit.
    CEILING = {
        name: "ceiling", flag: Some("ceiling"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Unset, read_by: POLICY,
        help: "Total age limit → kill `ceiling` (none unless given)",
    }
    /// `--write-tools`: the tools that end the pre-write extension.
    WRITE_TOOLS = {
        name: "write_tools", flag: Some("write-tools"), value_name: Some("TOOLS"), kind: List,
        default: Value("Write,Edit,MultiEdit,NotebookEdit"), read_by: POLICY,
        help: "Comma-separated tools whose first completed call ends the pre-write extension",
    }
    /// `--high-utilization`: the utilization that extends patience.
    HIGH_UTILIZATION = {
        name: "high_utilization", flag: Some("high-utilization"), value_name: Some("FRACTION"),
        kind: Fraction, default: Value("0.9"), read_by: POLICY,
        help: "Rate-limit utilization (0–1) at or above which patience is extended",
    }
    /// `--warn-at`: the fraction of a limit that warns.
    WARN_AT = {
        name: "warn_at", flag: Some("warn-at"), value_name: Some("FRACTION"),
        kind: NonZeroFraction, default: Value("0.8"), read_by: POLICY,
        help: "Fraction of a limit at which a stalling warning is shown",
    }
    /// `--output-blocked`: the bound on continuous blocked output.
    OUTPUT_BLOCKED = {
        name: "output_blocked", flag: Some("output-blocked"), value_name: Some("DURATION"),
        kind: Duration, default: Value("30m"), read_by: POLICY,
        help: "Our stdout took nothing for this long without a break (the reader stopped \
               reading) → kill `output_blocked`; 0 turns it off. The idle and no-progress \
               clocks stand still while our output waits",
    }
    /// `--max-backoff`: the most an announced back-off storm holds the clocks.
    MAX_BACKOFF = {
        name: "max_backoff", flag: Some("max-backoff"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Value("2h"), read_by: POLICY,
        help: "An announced API back-off (system/api_retry) is not idleness: the idle and \
               no-progress clocks start at its end, for at most this long after the first \
               retry of a storm",
    }
    /// `--grace`: SIGTERM to SIGKILL (the drop-in caps it at 2 s).
    GRACE = {
        name: "grace", flag: Some("grace"), value_name: Some("DURATION"), kind: Duration,
        default: Value("5s"), read_by: POLICY,
        help: "Time the child gets after SIGTERM before SIGKILL, also after a signal we forwarded",
    }
    /// `--busy-cap`: how long a busy tool holds the no-progress kill.
    BUSY_CAP = {
        name: "busy_cap", flag: Some("busy-cap"), value_name: Some("DURATION"), kind: Duration,
        default: Value("2h"), read_by: POLICY,
        help: "While a tool call is outstanding and its processes use CPU or move bytes on \
               their sockets, no progress is no hang, for at most this long after the last \
               progress (0: the process tree never holds the no_progress kill)",
    }
    /// `--max-rss`: the memory guard.
    MAX_RSS = {
        name: "max_rss", flag: Some("max-rss"), value_name: Some("SIZE"), kind: Size,
        default: Unset, read_by: POLICY,
        help: "The process tree's resident memory above SIZE (512M, 2G) for 5s → kill `memory` \
               (off unless given)",
    }
    /// `--summary`: the summary file.
    SUMMARY = {
        name: "summary", flag: Some("summary"), value_name: Some("FILE"), kind: Path,
        default: Unset, read_by: REPORT,
        help: "Write one JSON summary of the run to FILE when it ends (`-` for stderr). FILE is \
               checked before the command starts and replaced at the end in one step",
    }
    /// `--record`: the capture file.
    RECORD = {
        name: "record", flag: Some("record"), value_name: Some("FILE"), kind: Path,
        default: Unset, read_by: REPORT,
        help: "Record the run as a capture (JSON Lines, flushed line by line) to FILE",
    }
    /// `--strict`: exit 3 for every ending without a usable `result`.
    STRICT = {
        name: "strict", flag: Some("strict"), value_name: None, kind: Switch, default: Unset,
        read_by: REPORT,
        help: "Exit 3 for every ending without a usable `result` (no_result, incomplete), \
               whatever the command's own exit code (by default only a stream-json command \
               that exits 0 without one does)",
    }
    /// `--emit-result`: the synthetic `result` on a kill (the drop-in always writes it).
    EMIT_RESULT = {
        name: "emit_result", flag: Some("emit-result"), value_name: None, kind: Switch,
        default: Unset, read_by: RUN,
        help: "On a kill, first write one synthetic final `result` line to stdout (what the \
               Agent SDKs read as an error result), and exit 1 like the CLI after an error \
               result",
    }
    /// `--no-status`: no live status line.
    NO_STATUS = {
        name: "no_status", flag: Some("no-status"), value_name: None, kind: Switch,
        default: Unset, read_by: RUN,
        help: "Never show the live status line, even on a terminal",
    }
    /// `--no-recover-output-limit`: no continuation after the output limit (also the hook's).
    NO_RECOVER_OUTPUT_LIMIT = {
        name: "no_recover_output_limit", flag: Some("no-recover-output-limit"),
        value_name: None, kind: Switch, default: Unset, read_by: RUN_AND_HOOK,
        help: "Do not continue a session cut off by the output token limit (continued once by \
               default)",
    }
    /// `--resume-after-kill`: continue once after our own kill.
    RESUME_AFTER_KILL = {
        name: "resume_after_kill", flag: Some("resume-after-kill"), value_name: None,
        kind: Switch, default: Unset, read_by: RUN,
        help: "Continue the session once after our own idle, no_progress or linger kill",
    }
    /// `--wait-for-reset`: wait for a rate limit's reset, then continue once.
    WAIT_FOR_RESET = {
        name: "wait_for_reset", flag: Some("wait-for-reset"), value_name: None, kind: Switch,
        default: Unset, read_by: RUN,
        help: "After a rejected rate limit with a known reset time, wait for the reset, then \
               continue the session once",
    }
    /// `--max-wait`: the longest rate-limit wait.
    MAX_WAIT = {
        name: "max_wait", flag: Some("max-wait"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Value("6h"), read_by: RUN,
        help: "The longest rate-limit wait",
    }
    /// `--reset-margin`: added to a reset time.
    RESET_MARGIN = {
        name: "reset_margin", flag: Some("reset-margin"), value_name: Some("DURATION"),
        kind: Duration, default: Value("30s"), read_by: RUN,
        help: "Added to the reset time before continuing",
    }
    /// `--state-dir`: where the continuation markers live (also the hook's).
    STATE_DIR = {
        name: "state_dir", flag: Some("state-dir"), value_name: Some("DIR"), kind: Path,
        default: Described("$XDG_STATE_HOME/agent-watchdog, else ~/.local/state/agent-watchdog"),
        read_by: RUN_AND_HOOK,
        help: "Where the continuation markers live",
    }
    /// `--ledger`: a shared Redis or PostgreSQL ledger for the markers (also the hook's).
    LEDGER = {
        name: "ledger", flag: Some("ledger"), value_name: Some("URL"), kind: LedgerUrl,
        default: Described("the state directory"), read_by: RUN_AND_HOOK,
        help: "Keep the continuation markers in a shared ledger, redis://… or postgres://… \
               (every machine that may continue a session must name the same one); shown \
               without its password",
    }
    /// The real `claude` the drop-in runs.
    CLAUDE = {
        name: "claude", flag: None, value_name: None, kind: Path,
        default: Described("the first claude on PATH that is not the drop-in"),
        read_by: &[Reader::DropIn],
        help: "The real claude the drop-in runs",
    }
    /// The `agent-watchdog` the plugin's hook command runs.
    BIN = {
        name: "bin", flag: None, value_name: None, kind: Path,
        default: Described("agent-watchdog on PATH"), read_by: &[Reader::Hook],
        help: "The agent-watchdog the subagent plugin's hook command runs",
    }
    /// The switch of our OpenTelemetry export.
    TELEMETRY = {
        name: "telemetry", flag: None, value_name: None, kind: Switch,
        default: Unset, read_by: &[Reader::Telemetry],
        help: "Export every watchdog decision as OpenTelemetry metrics and events (OTEL_* variables)",
    }
    /// The bound on the telemetry flush at exit.
    TELEMETRY_FLUSH_MS = {
        name: "telemetry_flush_ms", flag: None, value_name: None, kind: Milliseconds,
        default: Value("2000"), read_by: &[Reader::Telemetry],
        help: "The bound on the telemetry flush at exit (and on each export request), in ms",
    }
}

#[cfg(test)]
mod tests {
    use super::super::{defaults, format_duration, HumanDuration};
    use super::*;

    /// Every default of the table is the core's constant, written as its parser reads it.
    #[test]
    fn the_defaults_are_the_cores() {
        let expected: &[(&str, String)] = &[
            ("idle", defaults::IDLE.to_string()),
            ("extend_factor", defaults::EXTEND_FACTOR.to_string()),
            ("startup", defaults::STARTUP.to_string()),
            ("no_progress", defaults::NO_PROGRESS.to_string()),
            ("linger", defaults::LINGER.to_string()),
            ("write_tools", defaults::WRITE_TOOLS.join(",")),
            ("high_utilization", defaults::HIGH_UTILIZATION.to_string()),
            ("warn_at", defaults::WARN_AT.to_string()),
            ("grace", HumanDuration(defaults::TERM_GRACE).to_string()),
            (
                "output_blocked",
                defaults::OUTPUT_BLOCKED.map_or("0s".to_owned(), |d| d.to_string()),
            ),
            ("max_backoff", defaults::MAX_BACKOFF.to_string()),
            ("busy_cap", format_duration(defaults::BUSY_CAP)),
            ("max_wait", defaults::MAX_WAIT.to_string()),
            ("reset_margin", format_duration(defaults::RESET_MARGIN)),
            // The CLI's telemetry holds this one (a test there compares).
            ("telemetry_flush_ms", "2000".to_owned()),
        ];
        for o in OPTIONS {
            match o.default {
                OptionDefault::Value(v) => {
                    let want = expected.iter().find(|(n, _)| *n == o.name);
                    let want = want.unwrap_or_else(|| panic!("{}: no core default known", o.name));
                    assert_eq!(v, want.1, "the table's default of {}", o.name);
                    o.kind.check(v).unwrap();
                }
                OptionDefault::Unset if o.name == "ceiling" => assert!(defaults::CEILING.is_none()),
                OptionDefault::Unset if o.name == "max_rss" => assert!(defaults::MAX_RSS.is_none()),
                _ => assert!(expected.iter().all(|(n, _)| *n != o.name), "{}", o.name),
            }
        }
    }

    #[test]
    fn names_flags_and_variables_are_unique_and_agree() {
        for (i, o) in OPTIONS.iter().enumerate() {
            assert!(OPTIONS[..i]
                .iter()
                .all(|p| p.name != o.name && p.env != o.env));
            if let Some(flag) = o.flag {
                assert_eq!(flag.replace('-', "_"), o.name, "{}", o.name);
            }
            assert_eq!(
                o.value_name.is_none(),
                o.kind == ValueKind::Switch || o.flag.is_none()
            );
            assert!(
                !o.help.ends_with('.') && !o.help.contains('\n'),
                "{}",
                o.name
            );
            assert_eq!(find(o.name), Some(o));
            assert_eq!(by_env(o.env), Some(o));
        }
    }
}

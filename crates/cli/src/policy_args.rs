//! The policy flags shared by `run`, `replay` and `audit`, each also readable from an
//! `AGENT_WATCHDOG_*` environment variable.

use std::path::PathBuf;
use std::time::Duration;

use agent_sdk_watchdog::LedgerUrl;
use clap::builder::BoolishValueParser;
use clap::Args;
use watchdog_core::config::{
    ByteSize, Factor, Fraction, HumanDuration, NonZeroFraction, PositiveDuration,
};
use watchdog_core::Limits;

use crate::options::{self, OptionDefault, OptionSpec, ValueKind};

/// The prefix of every environment variable the watchdog reads.
pub use crate::options::ENV_PREFIX;

/// One rule for every `AGENT_WATCHDOG_*` variable, in both binaries and every subcommand: an
/// empty variable is the same as an unset one (`AGENT_WATCHDOG_STRICT=` is not a usage error,
/// and `AGENT_WATCHDOG_SUMMARY=` writes no summary). Removes them from this process's
/// environment, so the command-line parser, the drop-in and the hook see the same thing.
/// Call it first in `main`, before any thread starts.
pub fn forget_empty_env_vars() {
    let empty: Vec<_> = std::env::vars_os()
        .filter(|(k, v)| v.is_empty() && k.to_str().is_some_and(|k| k.starts_with(ENV_PREFIX)))
        .map(|(k, _)| k)
        .collect();
    for k in empty {
        std::env::remove_var(k);
    }
}

/// A parse error of options read from the environment (the drop-in's), as one line: the
/// table's parsers name the variable the user set ([`from_table`]): `invalid value 'maybe' in
/// AGENT_WATCHDOG_STRICT: must be a switch (…), got "maybe"`.
pub fn env_error_text(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or("invalid environment");
    let first = first.strip_prefix("error: ").unwrap_or(first).trim();
    if first.contains(ENV_PREFIX) {
        first.to_owned()
    } else {
        format!("invalid {ENV_PREFIX}* environment: {first}")
    }
}

/// A value an option's rule refused: the value as it may be shown, and why.
struct Rejected {
    /// The value, quoted (a ledger URL's without its password).
    shown: String,
    /// The rule's words (`must be a duration > 0, got 0s`).
    why: String,
}

impl Rejected {
    fn quoted(text: &str, why: impl ToString) -> Self {
        Rejected {
            shown: format!("'{text}'"),
            why: why.to_string(),
        }
    }
}

/// The value parser of an option of the table ([`from_table`]): the field type's rule (the
/// core's; the table's words for a switch; a ledger URL's own), with an error that names where
/// the bad value came from, and the rule with its range: the variable when the environment set
/// it (`invalid value '0s' in AGENT_WATCHDOG_IDLE: must be a duration > 0, got 0s`), the flag
/// when the command line did (`invalid value '0s' for '--idle <DURATION>': …`).
#[derive(Clone)]
struct TableParser<T> {
    option: &'static OptionSpec,
    parse: fn(&str) -> Result<T, Rejected>,
}

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for TableParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        self.parse_ref_(cmd, arg, value, clap::parser::ValueSource::CommandLine)
    }

    fn parse_ref_(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
        source: clap::parser::ValueSource,
    ) -> Result<T, clap::Error> {
        let o = self.option;
        let parsed = match value.to_str() {
            Some(text) => (self.parse)(text),
            None => Err(Rejected {
                shown: format!("{value:?}"),
                why: "must be UTF-8 text".to_owned(),
            }),
        };
        parsed.map_err(|r| {
            let (place, who) = match (source, o.flag) {
                (clap::parser::ValueSource::EnvVariable, _) | (_, None) => {
                    (format!("in {}", o.env), o.env.to_owned())
                }
                (_, Some(flag)) => match o.value_name {
                    Some(v) => (format!("for '--{flag} <{v}>'"), format!("--{flag}")),
                    None => (format!("for '--{flag}'"), format!("--{flag}")),
                },
            };
            // The range, when the rule's words did not say it (a value that is no duration).
            let range = if r.why.contains(o.range()) {
                String::new()
            } else {
                format!("; {who} takes {}", o.range())
            };
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value {} {place}: {}{range}\n", r.shown, r.why),
            )
            .with_cmd(cmd)
        })
    }
}

/// The table's parser for option `o` (`None`: clap's own, for a path, which takes anything).
fn table_parser(o: &'static OptionSpec) -> Option<clap::builder::ValueParser> {
    use clap::builder::ValueParser;
    use watchdog_core::config::InvalidValue;
    fn rule<T: std::str::FromStr<Err = InvalidValue>>(text: &str) -> Result<T, Rejected> {
        text.parse()
            .map_err(|e: InvalidValue| Rejected::quoted(text, e))
    }
    fn of<T: Clone + Send + Sync + 'static>(
        option: &'static OptionSpec,
        parse: fn(&str) -> Result<T, Rejected>,
    ) -> Option<ValueParser> {
        Some(ValueParser::new(TableParser { option, parse }))
    }
    match o.kind {
        ValueKind::PositiveDuration => of::<PositiveDuration>(o, rule),
        ValueKind::Duration => of::<HumanDuration>(o, rule),
        ValueKind::Factor => of::<Factor>(o, rule),
        ValueKind::Fraction => of::<Fraction>(o, rule),
        ValueKind::NonZeroFraction => of::<NonZeroFraction>(o, rule),
        ValueKind::Size => of::<ByteSize>(o, rule),
        ValueKind::Switch => of::<bool>(o, |text| {
            options::parse_switch(text).ok_or_else(|| {
                let e = ValueKind::Switch.check(text).err();
                Rejected::quoted(text, e.map(|e| e.to_string()).unwrap_or_default())
            })
        }),
        ValueKind::LedgerUrl => of::<LedgerUrl>(o, parse_ledger),
        ValueKind::List => of::<String>(o, |text| Ok(text.to_owned())),
        _ => None,
    }
}

/// A ledger URL, shown without its password whichever way it came.
fn parse_ledger(text: &str) -> Result<LedgerUrl, Rejected> {
    LedgerUrl::parse(text).map_err(|e| Rejected {
        shown: e.shown().to_owned(),
        why: e.why().to_owned(),
    })
}

/// The parser of a `--ledger` field (`value_parser = ledger_parser()`: a `LedgerUrl` has no
/// `FromStr`): the table's ([`from_table`] sets the same one).
pub(crate) fn ledger_parser() -> clap::builder::ValueParser {
    clap::builder::ValueParser::new(TableParser {
        option: &options::LEDGER,
        parse: parse_ledger,
    })
}

/// Whether a value of this kind can never start with `-` legitimately, so that `--max-rss -1`
/// is read as the flag's (bad) value, refused with the flag's range, rather than as a flag.
fn takes_hyphen_values(kind: ValueKind) -> bool {
    matches!(
        kind,
        ValueKind::PositiveDuration
            | ValueKind::Duration
            | ValueKind::Factor
            | ValueKind::Fraction
            | ValueKind::NonZeroFraction
            | ValueKind::Size
    )
}

/// Give every argument that is an option of the table ([`options::OPTIONS`], by its
/// name) the table's flag, variable, placeholder, default and help; leave other arguments as
/// they are. Each flag struct applies it (`#[command(mut_args = from_table)]`), so `run`,
/// `replay`, `audit` and the drop-in all build these arguments from the one table; the value
/// parser is the field's type's (its rule in the core).
pub(crate) fn from_table(arg: clap::Arg) -> clap::Arg {
    let Some(o) = options::find(arg.get_id().as_str()) else {
        return arg;
    };
    let Some(flag) = o.flag else {
        return arg;
    };
    let mut arg = arg.long(flag).env(o.env).help(table_help(o));
    if let Some(v) = o.value_name {
        arg = arg.value_name(v);
    }
    if let Some(parser) = table_parser(o) {
        arg = arg.value_parser(parser);
    }
    if takes_hyphen_values(o.kind) {
        arg = arg.allow_hyphen_values(true);
    }
    match (o.default_value(), o.kind) {
        // A list's default is shown in the help as it is written (comma-separated), not as
        // clap lists several values.
        (Some(v), ValueKind::List) => arg
            .value_delimiter(',')
            .default_values(v.split(','))
            .hide_default_value(true)
            .required(false),
        (Some(v), _) => arg.default_value(v).required(false),
        (None, _) => arg,
    }
}

/// The help of an option: the table's line, with a default clap does not show itself.
fn table_help(o: &OptionSpec) -> String {
    match (o.default, o.default_value()) {
        (_, Some(v)) if o.kind == ValueKind::List => format!("{} [default: {v}]", o.help),
        (OptionDefault::Described(d), _) => format!("{} [default: {d}]", o.help),
        _ => o.help.to_owned(),
    }
}

/// Policy flags. Every flag has an `AGENT_WATCHDOG_<NAME>` environment variable; the flag wins.
/// Names, variables, defaults and help come from the option table
/// ([`options::OPTIONS`], [`from_table`]); each value is parsed by its rule in the core
/// (`watchdog_core::config`). Every duration is at most 365d.
#[derive(Debug, Clone, Args)]
#[command(mut_args = from_table)]
pub struct PolicyArgs {
    /// [`options::IDLE`].
    #[arg(long)]
    pub idle: PositiveDuration,
    /// [`options::EXTEND_FACTOR`].
    #[arg(long)]
    pub extend_factor: Factor,
    /// [`options::STARTUP`].
    #[arg(long)]
    pub startup: PositiveDuration,
    /// [`options::NO_PROGRESS`].
    #[arg(long)]
    pub no_progress: PositiveDuration,
    /// [`options::LINGER`].
    #[arg(long)]
    pub linger: PositiveDuration,
    /// [`options::CEILING`].
    #[arg(long)]
    pub ceiling: Option<PositiveDuration>,
    /// [`options::WRITE_TOOLS`].
    #[arg(long)]
    pub write_tools: Vec<String>,
    /// [`options::HIGH_UTILIZATION`].
    #[arg(long)]
    pub high_utilization: Fraction,
    /// [`options::WARN_AT`].
    #[arg(long)]
    pub warn_at: NonZeroFraction,
    /// [`options::OUTPUT_BLOCKED`] (0: off).
    #[arg(long)]
    pub output_blocked: HumanDuration,
    /// [`options::MAX_BACKOFF`].
    #[arg(long)]
    pub max_backoff: PositiveDuration,
    /// [`options::GRACE`].
    #[arg(long)]
    pub grace: HumanDuration,
    /// [`options::BUSY_CAP`].
    #[arg(long)]
    pub busy_cap: HumanDuration,
    /// [`options::MAX_RSS`].
    #[arg(long)]
    pub max_rss: Option<ByteSize>,
    /// [`options::TASK_SILENCE`] (0: the idle patience in force).
    #[arg(long)]
    pub task_silence: HumanDuration,
    /// [`options::CONTROL_TIMEOUT`] (0: off).
    #[arg(long)]
    pub control_timeout: HumanDuration,
}

impl Default for PolicyArgs {
    /// Every flag at its default, as when none is given and no variable is set: the table's
    /// defaults, read by the flags' own parsers.
    fn default() -> Self {
        use clap::{Args as _, FromArgMatches as _};
        let cmd = Self::augment_args(clap::Command::new("defaults").no_binary_name(true))
            .mut_args(|a| a.env(None));
        cmd.try_get_matches_from(std::iter::empty::<&str>())
            .and_then(|m| Self::from_arg_matches(&m))
            .expect("the option table's defaults are read by their flags' parsers")
    }
}

impl PolicyArgs {
    /// The core limits these flags describe. Each value was checked by its rule when parsed
    /// (its type is the rule), so this cannot fail.
    pub fn limits(&self) -> Limits {
        let mut limits = Limits::default();
        limits
            .set_idle(self.idle)
            .set_extend_factor(self.extend_factor)
            .set_startup(self.startup)
            .set_no_progress(self.no_progress)
            .set_linger(self.linger)
            .set_ceiling(self.ceiling)
            .set_write_tools(
                self.write_tools
                    .iter()
                    .map(|s| s.trim())
                    .filter(|s| !s.is_empty()),
            )
            .set_high_utilization(self.high_utilization)
            .set_warn_at(self.warn_at)
            .set_output_blocked(PositiveDuration::new(self.output_blocked.get()).ok())
            .set_max_backoff(self.max_backoff)
            .set_busy_cap(self.busy_cap)
            .set_max_rss(self.max_rss)
            .set_task_silence(PositiveDuration::new(self.task_silence.get()).ok())
            .set_control_timeout(PositiveDuration::new(self.control_timeout.get()).ok());
        limits
    }

    /// SIGTERM grace for the kill ladder.
    pub fn grace(&self) -> Duration {
        self.grace.get()
    }
}

/// Recovery flags of `run`. Every flag has an `AGENT_WATCHDOG_<NAME>` environment variable (the
/// switches accept `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`); all from the core's option
/// table ([`from_table`]).
#[derive(Debug, Clone, Args)]
#[command(mut_args = from_table)]
pub struct RecoveryArgs {
    /// [`options::NO_RECOVER_OUTPUT_LIMIT`].
    #[arg(long, value_parser = BoolishValueParser::new())]
    pub no_recover_output_limit: bool,
    /// [`options::RESUME_AFTER_KILL`].
    #[arg(long, value_parser = BoolishValueParser::new())]
    pub resume_after_kill: bool,
    /// [`options::WAIT_FOR_RESET`].
    #[arg(long, value_parser = BoolishValueParser::new())]
    pub wait_for_reset: bool,
    /// [`options::MAX_WAIT`].
    #[arg(long)]
    pub max_wait: PositiveDuration,
    /// [`options::RESET_MARGIN`].
    #[arg(long)]
    pub reset_margin: HumanDuration,
    /// [`options::STATE_DIR`].
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// [`options::LEDGER`] (its parser shows the URL without its password).
    #[arg(long, value_parser = ledger_parser())]
    pub ledger: Option<LedgerUrl>,
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use watchdog_core::recovery::Recovery;

    use super::*;

    #[derive(Debug, Parser)]
    #[command(no_binary_name = true)]
    struct Flags {
        #[command(flatten)]
        policy: PolicyArgs,
        #[command(flatten)]
        recovery: RecoveryArgs,
    }

    fn parse(args: &[&str]) -> Result<Flags, String> {
        Flags::try_parse_from(args).map_err(|e| e.to_string())
    }

    #[test]
    fn no_flags_mean_the_core_defaults() {
        let f = parse(&[]).unwrap();
        assert_eq!(f.policy.limits(), Limits::default());
        assert_eq!(PolicyArgs::default().limits(), Limits::default());
        let supervisor = agent_sdk_watchdog::SupervisorConfig::default();
        assert_eq!(f.policy.grace(), supervisor.term_grace);
        let r = Recovery::default();
        assert_eq!(f.recovery.max_wait.get(), r.max_wait());
        assert_eq!(f.recovery.reset_margin.get(), r.reset_margin());
    }

    #[test]
    fn a_rejected_flag_says_what_the_core_rule_says() {
        let cases: [(&[&str], String); 7] = [
            (
                &["--max-rss", "0"],
                "0".parse::<ByteSize>().unwrap_err().to_string(),
            ),
            (
                &["--busy-cap", "forever"],
                "forever".parse::<HumanDuration>().unwrap_err().to_string(),
            ),
            (
                &["--idle", "0s"],
                "0s".parse::<PositiveDuration>().unwrap_err().to_string(),
            ),
            (
                &["--extend-factor", "0.5"],
                Factor::new(0.5).unwrap_err().to_string(),
            ),
            (
                &["--high-utilization", "1.5"],
                Fraction::new(1.5).unwrap_err().to_string(),
            ),
            (
                &["--warn-at", "0"],
                NonZeroFraction::new(0.0).unwrap_err().to_string(),
            ),
            (
                &["--max-wait", "0s"],
                "0s".parse::<PositiveDuration>().unwrap_err().to_string(),
            ),
        ];
        for (args, rule) in cases {
            let e = parse(args).unwrap_err();
            assert!(e.contains(&rule), "{args:?}: {e}");
        }
        // The words of the rule, as a user sees them.
        let e = parse(&["--idle", "0s"]).unwrap_err();
        assert!(
            e.contains(
                "invalid value '0s' for '--idle <DURATION>': must be a duration > 0, got 0s"
            ),
            "{e}"
        );
    }

    /// The table's switch words are the ones clap's parser reads, so the hook (which reads
    /// them with `parse_switch`) and `run` agree on every value.
    #[test]
    fn the_tables_switch_words_are_clap_s() {
        use crate::options::{parse_switch, SWITCH_OFF, SWITCH_ON};
        use clap::builder::TypedValueParser;
        let cmd = clap::Command::new("t");
        let clap_reads = |w: &str| {
            BoolishValueParser::new()
                .parse_ref(&cmd, None, std::ffi::OsStr::new(w))
                .ok()
        };
        for w in SWITCH_ON.iter().chain(&SWITCH_OFF) {
            for w in [w.to_string(), w.to_uppercase()] {
                assert_eq!(clap_reads(&w), parse_switch(&w), "{w}");
            }
        }
        for w in ["maybe", "2", "enabled"] {
            assert_eq!((clap_reads(w), parse_switch(w)), (None, None), "{w}");
        }
    }

    #[test]
    fn flags_set_the_limits() {
        let f = parse(&[
            "--idle",
            "90s",
            "--ceiling",
            "2h",
            "--write-tools",
            "Write, Bash,",
            "--busy-cap",
            "0",
            "--max-rss",
            "1.5G",
        ])
        .unwrap();
        let l = f.policy.limits();
        assert_eq!(l.busy_cap(), Duration::ZERO);
        assert_eq!(l.max_rss(), Some(3 << 29));
        assert_eq!(l.idle(), Duration::from_secs(90));
        assert_eq!(l.ceiling(), Some(Duration::from_secs(7200)));
        assert_eq!(&*l.write_tools().join(","), "Write,Bash");
    }
}

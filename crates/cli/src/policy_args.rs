//! The policy flags shared by `run`, `replay` and `audit`, each also readable from an
//! `AGENT_WATCHDOG_*` environment variable.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::Args;
use watchdog_core::config::{
    defaults, Factor, Fraction, HumanDuration, NonZeroFraction, PositiveDuration,
};
use watchdog_core::{ConfigError, Limits};

/// The prefix of every environment variable the watchdog reads.
pub const ENV_PREFIX: &str = "AGENT_WATCHDOG_";

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

/// A parse error of options read from the environment, naming the variable the user set
/// rather than the flag it stands for: `AGENT_WATCHDOG_STRICT: invalid value 'maybe' for
/// '--strict': value was not a boolean`.
pub fn env_error_text(cmd: &clap::Command, e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or("invalid environment");
    let first = first.strip_prefix("error: ").unwrap_or(first).trim();
    let var = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => {
            let long = arg.trim_start_matches('-').split_whitespace().next();
            cmd.get_arguments()
                .find(|a| a.get_long().is_some() && a.get_long() == long)
                .and_then(|a| a.get_env())
                .map(|v| v.to_string_lossy().into_owned())
        }
        _ => None,
    };
    match var {
        Some(var) => format!("{var}: {first}"),
        None => format!("invalid {ENV_PREFIX}* environment: {first}"),
    }
}

/// Policy flags. Every flag has an `AGENT_WATCHDOG_<NAME>` environment variable; the flag wins.
/// Each value is parsed by its rule in the core (`watchdog_core::config`), and the defaults
/// shown are the core's (`watchdog_core::config::defaults`). Every duration is at most 365d.
#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// Idle patience: no stdout line for this long → kill `idle`. Until the first completed
    /// write tool and while rate-limit utilization is high, patience is idle × extend-factor.
    /// Every duration is at most 365d
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_IDLE", default_value_t = defaults::IDLE)]
    pub idle: PositiveDuration,
    /// Patience multiplier before the first completed write and at high utilization
    #[arg(long, value_name = "FACTOR", env = "AGENT_WATCHDOG_EXTEND_FACTOR", default_value_t = defaults::EXTEND_FACTOR)]
    pub extend_factor: Factor,
    /// No line at all since start → kill `startup`
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_STARTUP", default_value_t = defaults::STARTUP)]
    pub startup: PositiveDuration,
    /// Keep-alives only (pings, heartbeats) for this long → kill `no_progress`; an outstanding
    /// MCP call gets until Claude Code's own abort plus one heartbeat tick
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_NO_PROGRESS", default_value_t = defaults::NO_PROGRESS)]
    pub no_progress: PositiveDuration,
    /// After a result, nothing new and the stream still open → kill `linger`
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_LINGER", default_value_t = defaults::LINGER)]
    pub linger: PositiveDuration,
    /// Total age limit → kill `ceiling` (none unless given)
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_CEILING")]
    pub ceiling: Option<PositiveDuration>,
    /// The tools whose first completed call ends the pre-write extension (help text:
    /// `write_tools_help`, which shows the default comma-separated, as it is written)
    #[arg(
        long,
        value_name = "TOOLS",
        env = "AGENT_WATCHDOG_WRITE_TOOLS",
        value_delimiter = ',',
        default_values_t = defaults::WRITE_TOOLS.map(String::from),
        hide_default_value = true,
        help = write_tools_help()
    )]
    pub write_tools: Vec<String>,
    /// Rate-limit utilization (0–1) at or above which patience is extended
    #[arg(long, value_name = "FRACTION", env = "AGENT_WATCHDOG_HIGH_UTILIZATION", default_value_t = defaults::HIGH_UTILIZATION)]
    pub high_utilization: Fraction,
    /// Fraction of a limit at which a stalling warning is shown
    #[arg(long, value_name = "FRACTION", env = "AGENT_WATCHDOG_WARN_AT", default_value_t = defaults::WARN_AT)]
    pub warn_at: NonZeroFraction,
    /// Time the child gets after SIGTERM before SIGKILL, also after a signal we forwarded
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_GRACE", default_value_t = HumanDuration(defaults::TERM_GRACE))]
    pub grace: HumanDuration,
}

fn write_tools_help() -> String {
    format!(
        "Comma-separated tools whose first completed call ends the pre-write extension \
         [default: {}]",
        defaults::WRITE_TOOLS.join(",")
    )
}

impl Default for PolicyArgs {
    /// Every flag at its default, as when none is given.
    fn default() -> Self {
        PolicyArgs {
            idle: defaults::IDLE,
            extend_factor: defaults::EXTEND_FACTOR,
            startup: defaults::STARTUP,
            no_progress: defaults::NO_PROGRESS,
            linger: defaults::LINGER,
            ceiling: defaults::CEILING,
            write_tools: defaults::WRITE_TOOLS.map(String::from).into(),
            high_utilization: defaults::HIGH_UTILIZATION,
            warn_at: defaults::WARN_AT,
            grace: HumanDuration(defaults::TERM_GRACE),
        }
    }
}

impl PolicyArgs {
    /// The core limits these flags describe. Each value was checked by its rule when parsed,
    /// so this does not fail; the `Result` is the builder's.
    pub fn limits(&self) -> Result<Limits, ConfigError> {
        Limits::default()
            .with_idle(self.idle)?
            .with_extend_factor(self.extend_factor)?
            .with_startup(self.startup)?
            .with_no_progress(self.no_progress)?
            .with_linger(self.linger)?
            .with_ceiling(self.ceiling.map(PositiveDuration::get))?
            .with_write_tools(
                self.write_tools
                    .iter()
                    .map(|s| s.trim())
                    .filter(|s| !s.is_empty()),
            )
            .with_high_utilization(self.high_utilization)?
            .with_warn_at(self.warn_at)
    }

    /// SIGTERM grace for the kill ladder.
    pub fn grace(&self) -> Duration {
        self.grace.get()
    }
}

/// Recovery flags of `run`. Every flag has an `AGENT_WATCHDOG_<NAME>` environment variable (the
/// switches accept `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`).
#[derive(Debug, Clone, Args)]
pub struct RecoveryArgs {
    /// Do not continue a session cut off by the output token limit (continued once by default)
    #[arg(long, env = "AGENT_WATCHDOG_NO_RECOVER_OUTPUT_LIMIT", value_parser = BoolishValueParser::new())]
    pub no_recover_output_limit: bool,
    /// Continue the session once after our own idle, no_progress or linger kill
    #[arg(long, env = "AGENT_WATCHDOG_RESUME_AFTER_KILL", value_parser = BoolishValueParser::new())]
    pub resume_after_kill: bool,
    /// After a rejected rate limit with a known reset time, wait for the reset, then continue
    /// the session once
    #[arg(long, env = "AGENT_WATCHDOG_WAIT_FOR_RESET", value_parser = BoolishValueParser::new())]
    pub wait_for_reset: bool,
    /// The longest rate-limit wait
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_MAX_WAIT", default_value_t = defaults::MAX_WAIT)]
    pub max_wait: PositiveDuration,
    /// Added to the reset time before continuing
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_RESET_MARGIN", default_value_t = HumanDuration(defaults::RESET_MARGIN))]
    pub reset_margin: HumanDuration,
    /// Where the continuation markers live [default: $XDG_STATE_HOME/agent-watchdog, else
    /// ~/.local/state/agent-watchdog]
    #[arg(long, value_name = "DIR", env = "AGENT_WATCHDOG_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use watchdog_core::Recovery;

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
        assert_eq!(f.policy.limits().unwrap(), Limits::default());
        assert_eq!(PolicyArgs::default().limits().unwrap(), Limits::default());
        assert_eq!(f.policy.grace(), defaults::TERM_GRACE);
        let r = Recovery::default();
        assert_eq!(f.recovery.max_wait.get(), r.max_wait());
        assert_eq!(f.recovery.reset_margin.get(), r.reset_margin());
    }

    #[test]
    fn a_rejected_flag_says_what_the_core_rule_says() {
        let cases: [(&[&str], String); 5] = [
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

    #[test]
    fn flags_set_the_limits() {
        let f = parse(&[
            "--idle",
            "90s",
            "--ceiling",
            "2h",
            "--write-tools",
            "Write, Bash,",
        ])
        .unwrap();
        let l = f.policy.limits().unwrap();
        assert_eq!(l.idle(), Duration::from_secs(90));
        assert_eq!(l.ceiling(), Some(Duration::from_secs(7200)));
        assert_eq!(&*l.write_tools().join(","), "Write,Bash");
    }
}

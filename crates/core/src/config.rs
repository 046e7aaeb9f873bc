//! Policy limits: validated, plain data, with documented defaults.
//!
//! Each rule on a value lives in one type ([`PositiveDuration`], [`Factor`], [`Fraction`],
//! [`NonZeroFraction`]): the builders check with it, and its `FromStr` parses the command
//! line's flags, so a value is rejected in the same words everywhere ([`InvalidValue`],
//! [`ConfigError`]). Each default lives in one place, read through its typed value
//! (`Limits::default()`); public are only the bounds a host applies itself ([`MAX_LINE`],
//! [`INPUT_HOLD`]).

pub(crate) mod defaults;
pub(crate) mod limits;
pub(crate) mod mcp;
mod quiet;
pub(crate) mod session;
mod size;
pub(crate) mod values;

// Named from the crate root only.
pub use defaults::{INPUT_HOLD, MAX_LINE};
pub(crate) use limits::Limits;
pub(crate) use mcp::McpLimits;
pub use quiet::Quiet;
pub(crate) use session::SessionConfig;
pub use size::{format_bytes, ByteSize};
pub(crate) use values::ConfigError;

pub(crate) use values::format_duration;
pub use values::{
    Factor, Fraction, HumanDuration, IntoValid, InvalidValue, NonZeroFraction, PositiveDuration,
    MAX_DURATION,
};

/// Check `value` against `T`'s rule, naming `option` when it fails.
pub(crate) fn valid<T>(option: &'static str, value: impl IntoValid<T>) -> Result<T, ConfigError> {
    value.into_valid().map_err(|e| e.option(option))
}

/// The `# Default` tables of the docs say what the `Default` impls do: every row of each
/// table is read from the source and checked against the actual default.
#[cfg(test)]
mod default_tables {
    use std::collections::HashMap;
    use std::time::Duration;

    use super::*;
    use crate::recovery::{Recovery, Trigger};

    /// The rows (`option`, `default`) of the tables that follow a heading starting with
    /// `heading` in the doc comments of `source`.
    fn rows(source: &str, heading: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut in_section = false;
        for line in source.lines() {
            let text = line
                .trim_start()
                .trim_start_matches("///")
                .trim_start_matches("//!")
                .trim();
            if text.starts_with('#') {
                in_section = text.starts_with(heading);
                continue;
            }
            if !in_section || !text.starts_with('|') || text.starts_with("|---") {
                continue;
            }
            let cells: Vec<&str> = text.split('|').map(str::trim).collect();
            if cells[1] == "option" || cells[1] == "deadline" {
                continue; // the header
            }
            out.push((cells[1].trim_matches('`').to_owned(), cells[2].to_owned()));
        }
        out
    }

    fn dur(d: Duration) -> String {
        format_duration(d)
    }

    fn opt(d: Option<Duration>) -> String {
        d.map_or("none".into(), format_duration)
    }

    fn check(file: &str, source: &str, heading: &str, expected: &HashMap<&str, String>) {
        let rows = rows(source, heading);
        assert!(!rows.is_empty(), "{file}: no table under {heading:?}");
        for (option, default) in rows {
            let Some(want) = expected.get(option.as_str()) else {
                panic!("{file}: the row `{option}` has no known default");
            };
            assert_eq!(&default, want, "{file}: the default of `{option}`");
        }
    }

    #[test]
    fn every_documented_default_is_the_actual_one() {
        let l = Limits::default();
        let m = McpLimits::default();
        let limits: HashMap<&str, String> = [
            ("startup", dur(l.startup())),
            ("idle", dur(l.idle())),
            ("extend_factor", l.extend_factor().to_string()),
            ("high_utilization", l.high_utilization().to_string()),
            (
                "write_tools",
                l.write_tools()
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            ("no_progress", dur(l.no_progress())),
            ("linger", dur(l.linger())),
            ("ceiling", opt(l.ceiling())),
            ("warn_at", l.warn_at().to_string()),
            ("output_blocked", opt(l.output_blocked())),
            ("max_backoff", dur(l.max_backoff())),
            ("busy_cap", dur(l.busy_cap())),
            ("max_rss", l.max_rss().map_or("none".into(), format_bytes)),
            (
                "task_silence",
                l.task_silence()
                    .map_or("none (the idle patience)".into(), format_duration),
            ),
            ("control_timeout", opt(l.control_timeout())),
            ("mcp", "[`McpLimits::default`]".into()),
        ]
        .into();
        // The crate root's table states the deadlines the same way.
        check(
            "lib.rs",
            include_str!("lib.rs"),
            "# Deadlines and defaults",
            &limits,
        );
        // This file has the tables of Limits and McpLimits.
        let mut both = limits;
        both.extend([
            ("give_up", opt(m.give_up())),
            (
                "servers",
                if m.servers().is_empty() {
                    "none".into()
                } else {
                    format!("{:?}", m.servers())
                },
            ),
            (
                "margin",
                format!("{} (Claude Code's heartbeat tick)", dur(m.margin())),
            ),
        ]);
        let limits_and_mcp = [
            include_str!("config/limits.rs"),
            include_str!("config/mcp.rs"),
        ]
        .concat();
        check("config/limits.rs", &limits_and_mcp, "# Default", &both);

        let r = Recovery::default();
        let on = |t| if r.is_enabled(t) { "on" } else { "off" }.to_string();
        let recovery: HashMap<&str, String> = [
            ("output_limit", on(Trigger::OutputLimit)),
            ("after_kill", on(Trigger::AfterKill)),
            ("rate_limit_wait", on(Trigger::RateLimitWait)),
            ("prompts", "one per trigger ([`Recovery::prompt`])".into()),
            ("max_wait", dur(r.max_wait())),
            ("reset_margin", dur(r.reset_margin())),
        ]
        .into();
        check(
            "recovery/mod.rs",
            include_str!("recovery/mod.rs"),
            "# Default",
            &recovery,
        );

        let rl = crate::rate_limit::RateLimitConfig::default();
        let rate_limit: HashMap<&str, String> = [
            ("warn_at", rl.warn_at().to_string()),
            ("hysteresis", rl.hysteresis().to_string()),
            ("fallback_window", format!("`{}`", rl.fallback_window())),
        ]
        .into();
        let monitor = include_str!("rate_limit/monitor.rs");
        check("rate_limit/monitor.rs", monitor, "# Default", &rate_limit);
    }
}

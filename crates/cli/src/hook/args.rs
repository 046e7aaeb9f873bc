//! The flags of `hook`, and the environment variables that stand for them.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

/// The variable of `--state-dir` (the option table).
pub(crate) const STATE_DIR_VAR: &str = crate::options::STATE_DIR.env;
/// The variable of `--ledger` (the option table).
pub(crate) const LEDGER_VAR: &str = crate::options::LEDGER.env;
/// The variable of `--no-recover-output-limit` (the option table).
pub(crate) const NO_RECOVER_VAR: &str = crate::options::NO_RECOVER_OUTPUT_LIMIT.env;

/// Flags of `hook`. Each has the same `AGENT_WATCHDOG_*` environment variable as `run`'s flag,
/// but read leniently ([`HookArgs::with_env`]): a hook must never fail on its own settings.
#[derive(Debug, Clone, Default, Args)]
pub struct HookArgs {
    /// Where the continuation markers live [env: AGENT_WATCHDOG_STATE_DIR] [default:
    /// $XDG_STATE_HOME/agent-watchdog, else ~/.local/state/agent-watchdog]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Keep the markers in a shared ledger, redis://… or postgres://… [env:
    /// AGENT_WATCHDOG_LEDGER] [default: the state directory]. A value that is not such a URL
    /// makes the hook do nothing (it never falls back to the state directory)
    #[arg(long, value_name = "URL")]
    pub ledger: Option<String>,
    /// Do not continue subagents cut off by the output token limit (the hook then does nothing)
    /// [env: AGENT_WATCHDOG_NO_RECOVER_OUTPUT_LIMIT]
    #[arg(long)]
    pub no_recover_output_limit: bool,
}

impl HookArgs {
    /// Fill what the command line left unset from the environment (`env`: a variable's value).
    ///
    /// Never fails: an empty `AGENT_WATCHDOG_STATE_DIR` means the default directory; a value of
    /// `AGENT_WATCHDOG_NO_RECOVER_OUTPUT_LIMIT` that is not a switch (`1`/`0`, `true`/`false`,
    /// `yes`/`no`, `on`/`off`, any case) is taken as set, so the hook does nothing (it fails
    /// closed: no continuation). Each such fallback is one line in the returned notes.
    pub fn with_env(mut self, env: impl Fn(&str) -> Option<OsString>) -> (HookArgs, Vec<String>) {
        let mut notes = Vec::new();
        if self.state_dir.is_none() {
            match env(STATE_DIR_VAR) {
                Some(v) if v.is_empty() => notes.push(format!(
                    "{STATE_DIR_VAR} is empty: using the default state directory"
                )),
                Some(v) => self.state_dir = Some(PathBuf::from(v)),
                None => {}
            }
        }
        if self.ledger.is_none() {
            // Empty is unset (the rule of every variable); the URL is checked where it is used.
            self.ledger = env(LEDGER_VAR)
                .filter(|v| !v.is_empty())
                .map(|v| v.to_string_lossy().into_owned());
        }
        if !self.no_recover_output_limit {
            if let Some(v) = env(NO_RECOVER_VAR) {
                let text = v.to_string_lossy();
                // The switch words of the option table, as `run` reads them; empty is unset.
                let switch = if text.trim().is_empty() {
                    Some(false)
                } else {
                    crate::options::parse_switch(&text)
                };
                match switch {
                    Some(false) => {}
                    Some(true) => self.no_recover_output_limit = true,
                    None => {
                        notes.push(format!(
                            "{NO_RECOVER_VAR}={v:?} is not a switch (1/0, true/false, yes/no, \
                             on/off): taken as set, so nothing is continued"
                        ));
                        self.no_recover_output_limit = true;
                    }
                }
            }
        }
        (self, notes)
    }

    /// Where the markers live. A `--ledger` that is not a ledger URL is an error (shown
    /// without its password): the hook then continues nothing rather than use another ledger.
    pub(crate) fn ledger_choice(&self) -> Result<crate::ledger_choice::LedgerChoice, String> {
        let url = match &self.ledger {
            Some(text) => Some(
                agent_sdk_watchdog::LedgerUrl::parse(text)
                    .map_err(|e| format!("{LEDGER_VAR}/--ledger: {e}: nothing is continued"))?,
            ),
            None => None,
        };
        Ok(crate::ledger_choice::LedgerChoice {
            url,
            state_dir: self.state_dir.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_environment_never_fails_the_hook() {
        let off = |vars: &[(&str, &str)]| {
            let (a, notes) = HookArgs::default().with_env(env(vars));
            (a.no_recover_output_limit, notes.len())
        };
        for v in ["", "0", "false", "No", "OFF"] {
            assert_eq!(off(&[(NO_RECOVER_VAR, v)]), (false, 0), "{v:?}");
        }
        for v in ["1", "true", "YES", " on "] {
            assert_eq!(off(&[(NO_RECOVER_VAR, v)]), (true, 0), "{v:?}");
        }
        for v in ["2", "enabled", "-1", "\u{1F600}"] {
            assert_eq!(
                off(&[(NO_RECOVER_VAR, v)]),
                (true, 1),
                "{v:?}: fails closed"
            );
        }
        let (a, notes) = HookArgs::default().with_env(env(&[(STATE_DIR_VAR, "")]));
        assert_eq!((a.state_dir, notes.len()), (None, 1), "empty: the default");
        let (a, notes) = HookArgs::default().with_env(env(&[(STATE_DIR_VAR, "/s")]));
        assert_eq!((a.state_dir, notes.len()), (Some(PathBuf::from("/s")), 0));
        // A flag wins over its variable, and is not checked against it.
        let flags = HookArgs {
            state_dir: Some(PathBuf::from("/flag")),
            no_recover_output_limit: true,
            ledger: None,
        };
        let (a, notes) = flags.with_env(env(&[(STATE_DIR_VAR, ""), (NO_RECOVER_VAR, "x")]));
        assert_eq!(a.state_dir, Some(PathBuf::from("/flag")));
        assert!(notes.is_empty());
    }

    #[test]
    fn a_bad_ledger_url_fails_closed_without_its_password() {
        let (a, _) = HookArgs::default().with_env(env(&[(LEDGER_VAR, "mysql://u:pw1@h/d")]));
        let e = a.ledger_choice().unwrap_err();
        assert!(
            e.contains("nothing is continued") && !e.contains("pw1"),
            "{e}"
        );
        let (a, _) = HookArgs::default().with_env(env(&[(LEDGER_VAR, "")]));
        assert!(
            a.ledger_choice().unwrap().url.is_none(),
            "empty: the state directory"
        );
        let (a, _) = HookArgs::default().with_env(env(&[(LEDGER_VAR, "redis://h:1/0")]));
        assert!(a.ledger_choice().unwrap().url.is_some());
    }
}

//! A session's policy as the SDK helpers take it (`watchdogEnv({ idle: '5m' })`,
//! `watchdog_env(idle="5m")`): checked by each option's rule and written as the
//! `AGENT_WATCHDOG_*` variables the drop-in and the plugin's hook read ([`env_for`]); and read
//! back from those variables into the core's limits, as the drop-in reads them
//! ([`SessionPolicy::from_env`]), for a host that runs the policy's rules beside the drop-in.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde_json::Value;
use watchdog_core::config::{
    ByteSize, Factor, Fraction, HumanDuration, InvalidValue, NonZeroFraction, PositiveDuration,
};
use watchdog_core::Limits;

use super::{find, parse_switch, OptionSpec, Reader, ValueKind, OPTIONS, TERM_GRACE};

/// What is wrong with a policy field: the binding raises it as a `TypeError` (the value's type
/// or an unknown field) or a range error (a value its rule rejects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// The field as it was given (`noProgress`, `no_progress`).
    pub key: String,
    /// A type error (or an unknown field), rather than a value out of its range.
    pub type_error: bool,
    /// One sentence, naming the field.
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PolicyError {}

/// Whether an option is part of a session's policy: the drop-in reads it, or the plugin's hook
/// (the session's environment carries both).
pub fn in_session_policy(o: &OptionSpec) -> bool {
    o.is_read_by(Reader::DropIn) || o.is_read_by(Reader::Hook)
}

/// The options a session's policy may set, in the table's order.
pub fn session_options() -> impl Iterator<Item = &'static OptionSpec> {
    OPTIONS.iter().filter(|o| in_session_policy(o))
}

/// `noProgress` → `no_progress` (a snake-case name is kept as it is).
pub fn snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A number as the duration and number parsers read it (`90`, `0.5`).
fn number_text(n: f64) -> String {
    let mut s = format!("{n}");
    if s.contains('e') {
        s = format!("{n:.9}");
    }
    s
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
        other => other.to_string(),
    }
}

/// One field's value as its variable's text, checked by the option's rule.
fn value_text(key: &str, o: &OptionSpec, v: &Value) -> Result<String, PolicyError> {
    let type_error = |expected: &str| PolicyError {
        key: key.to_owned(),
        type_error: true,
        message: format!("{key}: expected {expected}, got {}", describe(v)),
    };
    let range = |e: InvalidValue| PolicyError {
        key: key.to_owned(),
        type_error: false,
        message: format!("{key}: {e}"),
    };
    let text = match (o.kind, v) {
        (ValueKind::PositiveDuration | ValueKind::Duration, Value::String(s)) => {
            s.trim().to_owned()
        }
        (ValueKind::PositiveDuration | ValueKind::Duration, Value::Number(n)) => {
            let n = n.as_f64().unwrap_or(f64::NAN);
            let ok = n.is_finite() && (n > 0.0 || (n == 0.0 && o.kind == ValueKind::Duration));
            if !ok {
                return Err(range(InvalidValue {
                    allowed: o.range(),
                    value: number_text(n),
                }));
            }
            number_text(n)
        }
        (ValueKind::PositiveDuration | ValueKind::Duration, _) => {
            return Err(type_error("a duration (\"90s\", \"10m\", or seconds)"))
        }
        (
            ValueKind::Factor | ValueKind::Fraction | ValueKind::NonZeroFraction,
            Value::Number(n),
        ) => number_text(n.as_f64().unwrap_or(f64::NAN)),
        (ValueKind::Factor | ValueKind::Fraction | ValueKind::NonZeroFraction, _) => {
            return Err(type_error("a number"))
        }
        (ValueKind::Switch, Value::Bool(b)) => if *b { "1" } else { "0" }.to_owned(),
        (ValueKind::Switch, Value::String(s)) if parse_switch(s).is_some() => s.trim().to_owned(),
        (ValueKind::Switch, _) => return Err(type_error("a boolean")),
        (ValueKind::List, Value::Array(items)) => {
            let mut names = Vec::with_capacity(items.len());
            for item in items {
                match item.as_str().map(str::trim) {
                    Some(t) if !t.is_empty() && !t.contains(',') => names.push(t),
                    _ => {
                        return Err(PolicyError {
                            key: key.to_owned(),
                            type_error: false,
                            message: format!(
                                "{key}: names must be non-empty strings without commas, got {}",
                                Value::Array(items.clone())
                            ),
                        })
                    }
                }
            }
            names.join(",")
        }
        (ValueKind::List, _) => return Err(type_error("an array of names")),
        (ValueKind::Size, Value::String(s)) => s.trim().to_owned(),
        (ValueKind::Size, Value::Number(n)) if n.as_u64().is_some() => n.to_string(),
        (ValueKind::Size, _) => return Err(type_error("a size (\"512M\", or bytes)")),
        (ValueKind::Milliseconds, Value::Number(n)) if n.as_u64().is_some() => n.to_string(),
        (ValueKind::Milliseconds, _) => return Err(type_error("a whole number of milliseconds")),
        (ValueKind::Path | ValueKind::LedgerUrl, Value::String(s)) if !s.is_empty() => s.clone(),
        (ValueKind::Path | ValueKind::LedgerUrl, _) => return Err(type_error("a path")),
    };
    o.kind.check(&text).map_err(range)?;
    Ok(text)
}

/// The `AGENT_WATCHDOG_*` variables of a session's policy: each field (snake or camel case,
/// an option of [`session_options`]) checked by its option's rule (a number of seconds or a
/// duration's text, a number, a boolean, an array of names, a path, a ledger's URL); a `null`
/// field is left out.
///
/// ```
/// use serde_json::json;
/// use watchdog_host::options::env_for;
/// let policy = json!({"idle": "5m", "noProgress": 90, "extendFactor": 1.5,
///                     "writeTools": ["Write", "Edit"], "ceiling": null});
/// let env = env_for(policy.as_object().unwrap()).unwrap();
/// assert_eq!(env["AGENT_WATCHDOG_IDLE"], "5m");
/// assert_eq!(env["AGENT_WATCHDOG_NO_PROGRESS"], "90");
/// assert_eq!(env["AGENT_WATCHDOG_WRITE_TOOLS"], "Write,Edit");
/// assert!(!env.contains_key("AGENT_WATCHDOG_CEILING"));
/// let bad = env_for(json!({"idle": "0s"}).as_object().unwrap()).unwrap_err();
/// assert_eq!(bad.message, "idle: must be a duration > 0, got 0s");
/// assert!(env_for(json!({"idel": "5m"}).as_object().unwrap()).unwrap_err().type_error);
/// ```
pub fn env_for(
    policy: &serde_json::Map<String, Value>,
) -> Result<BTreeMap<&'static str, String>, PolicyError> {
    let mut env = BTreeMap::new();
    for (key, v) in policy {
        let o = find(&snake_case(key))
            .filter(|o| in_session_policy(o))
            .ok_or_else(|| PolicyError {
                key: key.clone(),
                type_error: true,
                message: format!(
                    "unknown policy field {key:?}: expected one of {}",
                    session_options()
                        .map(|o| o.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })?;
        if v.is_null() {
            continue;
        }
        env.insert(o.env, value_text(key, o, v)?);
    }
    Ok(env)
}

/// The watchdog's policy of one session as the drop-in reads it from its environment: the
/// core's limits and the kill's grace.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPolicy {
    /// The limits.
    pub limits: Limits,
    /// SIGTERM to SIGKILL, as set (the drop-in caps it: [`SessionPolicy::drop_in_grace`]).
    pub grace: Duration,
}

impl SessionPolicy {
    /// The policy of the `AGENT_WATCHDOG_*` variables among `vars` (an empty one is unset, as
    /// for the drop-in); every other option at its default. An invalid value is the error
    /// the drop-in would refuse it with, naming the variable.
    ///
    /// ```
    /// use std::time::Duration;
    /// use watchdog_host::options::SessionPolicy;
    /// let p = SessionPolicy::from_env([("AGENT_WATCHDOG_IDLE", "90s"), ("HOME", "/h")]).unwrap();
    /// assert_eq!(p.limits.idle(), Duration::from_secs(90));
    /// assert_eq!(p.grace, Duration::from_secs(5), "the default");
    /// let e = SessionPolicy::from_env([("AGENT_WATCHDOG_IDLE", "0")]).unwrap_err();
    /// assert_eq!(e, "AGENT_WATCHDOG_IDLE: must be a duration > 0, got 0");
    /// ```
    pub fn from_env<K: AsRef<str>, V: AsRef<str>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Result<SessionPolicy, String> {
        let vars: BTreeMap<String, String> = vars
            .into_iter()
            .filter(|(_, v)| !v.as_ref().is_empty())
            .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
            .collect();
        let mut limits = Limits::default();
        let mut grace = TERM_GRACE;
        for o in OPTIONS.iter().filter(|o| o.is_read_by(Reader::DropIn)) {
            let Some(text) = vars.get(o.env) else {
                continue;
            };
            let bad = |e: InvalidValue| format!("{}: {e}", o.env);
            let parsed = |t: &str| t.parse::<PositiveDuration>().map_err(bad);
            let any = |t: &str| {
                t.parse::<HumanDuration>()
                    .map(HumanDuration::get)
                    .map_err(bad)
            };
            match o.name {
                "idle" => {
                    limits.set_idle(parsed(text)?);
                }
                "startup" => {
                    limits.set_startup(parsed(text)?);
                }
                "no_progress" => {
                    limits.set_no_progress(parsed(text)?);
                }
                "linger" => {
                    limits.set_linger(parsed(text)?);
                }
                "ceiling" => {
                    limits.set_ceiling(Some(parsed(text)?));
                }
                "max_backoff" => {
                    limits.set_max_backoff(parsed(text)?);
                }
                "extend_factor" => {
                    limits.set_extend_factor(text.parse::<Factor>().map_err(bad)?);
                }
                "high_utilization" => {
                    limits.set_high_utilization(text.parse::<Fraction>().map_err(bad)?);
                }
                "warn_at" => {
                    limits.set_warn_at(text.parse::<NonZeroFraction>().map_err(bad)?);
                }
                "write_tools" => {
                    limits
                        .set_write_tools(text.split(',').map(str::trim).filter(|t| !t.is_empty()));
                }
                "output_blocked" => {
                    limits.set_output_blocked(PositiveDuration::new(any(text)?).ok());
                }
                "busy_cap" => {
                    limits.set_busy_cap(HumanDuration(any(text)?));
                }
                "max_rss" => {
                    limits.set_max_rss(Some(text.parse::<ByteSize>().map_err(bad)?));
                }
                "grace" => grace = any(text)?,
                _ => {}
            }
        }
        Ok(SessionPolicy { limits, grace })
    }

    /// The grace the drop-in uses: the policy's, at most [`DROP_IN_GRACE`].
    pub fn drop_in_grace(&self) -> Duration {
        self.grace.min(DROP_IN_GRACE)
    }

    /// The Temporal activity timeouts of this policy plus `margin` ([`activity_timeouts`]).
    pub fn activity_timeouts(&self, margin: Duration) -> (Duration, Option<Duration>) {
        activity_timeouts(&self.limits, self.grace, margin)
    }
}

/// The Temporal activity timeouts of `limits` with `grace` and `margin`: (heartbeat,
/// start-to-close). The heartbeat timeout is the longest a healthy session that holds nothing
/// goes quiet ([`Quiet::unheld`](watchdog_core::config::Quiet::unheld)) plus the grace and the
/// margin: the helpers heartbeat on a timer through every hold, so it is how fast a dead
/// worker is noticed. The start-to-close timeout is the ceiling plus the grace and the margin
/// (`None` without a ceiling).
///
/// ```
/// use std::time::Duration;
/// use watchdog_core::Limits;
/// use watchdog_host::options::activity_timeouts;
/// let s = Duration::from_secs;
/// // max(startup 3m, idle 10m × 2, no_progress 30m) + 5 s + 1 min; no ceiling.
/// assert_eq!(activity_timeouts(&Limits::default(), s(5), s(60)), (s(1865), None));
/// ```
pub fn activity_timeouts(
    limits: &Limits,
    grace: Duration,
    margin: Duration,
) -> (Duration, Option<Duration>) {
    let heartbeat = limits
        .quiet(true)
        .unheld
        .saturating_add(grace)
        .saturating_add(margin);
    let start_to_close = limits
        .ceiling()
        .map(|c| c.saturating_add(grace).saturating_add(margin));
    (heartbeat, start_to_close)
}

/// The drop-in's cap on the grace: an SDK's own close waits about this long.
pub const DROP_IN_GRACE: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(v: Value) -> Result<BTreeMap<&'static str, String>, PolicyError> {
        env_for(v.as_object().unwrap())
    }

    #[test]
    fn every_kind_is_checked_by_its_rule_and_named_by_its_field() {
        let ok = env(json!({
            "idle": 90, "no_progress": "20m", "grace": 0, "busyCap": "0s",
            "highUtilization": 0.5, "warn_at": 1, "strict": true,
            "no_recover_output_limit": "off", "write_tools": [" Write ", "Edit"],
            "max_rss": "512M", "ledger": "redis://127.0.0.1:6379/0", "claude": "/bin/claude",
        }))
        .unwrap();
        assert_eq!(ok["AGENT_WATCHDOG_IDLE"], "90");
        assert_eq!(ok["AGENT_WATCHDOG_GRACE"], "0", "0 is a valid grace");
        assert_eq!(ok["AGENT_WATCHDOG_BUSY_CAP"], "0s");
        assert_eq!(ok["AGENT_WATCHDOG_STRICT"], "1");
        assert_eq!(ok["AGENT_WATCHDOG_WRITE_TOOLS"], "Write,Edit");
        for (bad, type_error, says) in [
            (
                json!({"idle": 0}),
                false,
                "idle: must be a duration > 0, got 0",
            ),
            (json!({"idle": -1.5}), false, "idle: must be a duration > 0"),
            (json!({"idle": ""}), false, "idle: must be a duration"),
            (json!({"idle": true}), true, "idle: expected a duration"),
            (
                json!({"extendFactor": 0.5}),
                false,
                "extendFactor: must be a number >= 1",
            ),
            (
                json!({"extend_factor": "2"}),
                true,
                "extend_factor: expected a number",
            ),
            (json!({"warn_at": 0}), false, "warn_at: must be"),
            (
                json!({"writeTools": "Write"}),
                true,
                "writeTools: expected an array",
            ),
            (json!({"writeTools": ["a,b"]}), false, "without commas"),
            (
                json!({"strict": "maybe"}),
                true,
                "strict: expected a boolean",
            ),
            (json!({"ledger": "http://x"}), false, "ledger: must be"),
            (json!({"claude": ""}), true, "claude: expected a path"),
            (
                json!({"max_wait": "1h"}),
                true,
                "unknown policy field \"max_wait\"",
            ),
        ] {
            let e = env(bad.clone()).unwrap_err();
            assert_eq!(e.type_error, type_error, "{bad}: {e}");
            assert!(e.message.contains(says), "{bad}: {e}");
        }
        // A ledger's password is never in the error.
        let e = env(json!({"ledger": "redis://u:Pa55-w0rd-x@127.0.0.1:1/0/extra"}));
        if let Err(e) = e {
            assert!(!e.message.contains("Pa55-w0rd-x"), "{e}");
        }
    }

    /// What env_for writes, the drop-in's reading reads back: the policy a helper sets is the
    /// one its fold runs.
    #[test]
    fn the_variables_read_back_as_the_limits() {
        let vars = env(json!({
            "idle": "5s", "noProgress": 8, "startup": "10s", "extendFactor": 1,
            "busyCap": "1m", "maxBackoff": "20s", "grace": "5s", "ceiling": "2h",
        }))
        .unwrap();
        let p = SessionPolicy::from_env(vars).unwrap();
        let s = Duration::from_secs;
        assert_eq!(p.limits.idle(), s(5));
        assert_eq!(p.limits.no_progress(), s(8));
        assert_eq!(p.limits.startup(), s(10));
        assert_eq!(p.limits.extend_factor(), 1.0);
        assert_eq!(p.limits.busy_cap(), s(60));
        assert_eq!(p.limits.max_backoff(), s(20));
        assert_eq!(p.limits.ceiling(), Some(s(7200)));
        assert_eq!(p.grace, s(5));
        assert_eq!(p.drop_in_grace(), s(2), "capped as the drop-in caps it");
        assert_eq!(
            SessionPolicy::from_env([("AGENT_WATCHDOG_IDLE", "")])
                .unwrap()
                .limits,
            Limits::default()
        );
    }

    #[test]
    fn every_session_option_has_a_rule_for_its_values() {
        // Each option of a session's policy takes its default (when it has one) as a value.
        for o in session_options() {
            if let Some(d) = o.default_value() {
                let v = match o.kind {
                    ValueKind::List => json!(d.split(',').collect::<Vec<_>>()),
                    ValueKind::Factor | ValueKind::Fraction | ValueKind::NonZeroFraction => {
                        json!(d.parse::<f64>().unwrap())
                    }
                    _ => json!(d),
                };
                let out = env(json!({ o.name: v })).unwrap_or_else(|e| panic!("{}: {e}", o.name));
                assert_eq!(out.len(), 1, "{}", o.name);
            }
        }
        assert!(session_options().count() >= 20);
    }
}

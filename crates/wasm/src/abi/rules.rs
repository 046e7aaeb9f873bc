//! The exports of what follows from the rules, for the npm package's helpers (`index.js`'s
//! `watchdogEnv` and `watchdogKill`, `lib/temporal.mjs`, `lib/metrics-server.mjs`): each a
//! call into the one Rust home of its rule, text in and out through the buffers as JSON.
//!
//! - [`rules_tables`]: the continuation prompt, the retrying host's failures, the session
//!   policy's options, the `/metrics` endpoint's defaults.
//! - [`rules_env`] (`watchdog_host::options::env_for`), [`rules_kill`] (the synthetic result's
//!   reader), [`rules_timeouts`] (the activity timeouts), [`rules_metrics_answer`] and
//!   [`rules_metrics_options`] (the endpoint's answers and bounds).
//! - `rules_run_*`: the SDK-run fold ([`watchdog_host::sdk_run::SdkRun`]), one object per
//!   session, named by an index; times are the host's milliseconds ([`crate::clock`]).

#![allow(unsafe_code)] // `#[no_mangle]` only: each export is named as it is written.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Map, Value};
use watchdog_core::config::{HumanDuration, InvalidValue};
use watchdog_core::ending::FAILURES;
use watchdog_core::recovery::{Recovery, Trigger};
use watchdog_core::synthetic::SyntheticKill;
use watchdog_core::LineView;
use watchdog_host::metrics::bounds::ServeBounds;
use watchdog_host::metrics::scrape::{Request, CONTENT_TYPE};
use watchdog_host::options::{env_for, session_options, SessionPolicy};
use watchdog_host::sdk_run::SdkRun;

use crate::clock;
use crate::state::{with, Table};

thread_local! {
    static RUNS: RefCell<Table<SdkRun>> = RefCell::new(Table::default());
}

/// The input's first `len` bytes as JSON (`Null` when they are not JSON).
fn input_json(len: u32) -> Value {
    with(|s| serde_json::from_slice(s.input(len)).unwrap_or(Value::Null))
}

fn answer(v: &Value) -> u32 {
    with(|s| s.answer(&v.to_string()))
}

fn error(message: impl std::fmt::Display, type_error: bool) -> Value {
    json!({"error": message.to_string(), "typeError": type_error})
}

/// The rules' tables, as JSON (length of the text): `afterKillPrompt` (the continuation prompt
/// after a kill), `failures` (`{ending: [type, retryable]}`, and `fallback`, the failure of a
/// kill the table does not name), `policy` (the session policy's options: `name`, `env`,
/// `kind`, `default`, `range`), `metrics` (the endpoint's content type and defaults).
#[no_mangle]
pub extern "C" fn rules_tables() -> u32 {
    let failures: Map<String, Value> = FAILURES
        .iter()
        .map(|(n, f)| ((*n).to_owned(), json!([f.error_type, f.retryable])))
        .collect();
    let fallback = watchdog_core::ending::failure("");
    let policy: Vec<Value> = session_options()
        .map(|o| {
            json!({"name": o.name, "env": o.env, "kind": format!("{:?}", o.kind),
                   "default": o.default_value(), "range": o.range()})
        })
        .collect();
    let d = ServeBounds::default();
    answer(&json!({
        "afterKillPrompt": Recovery::default().prompt(Trigger::AfterKill),
        "failures": failures,
        "fallback": [fallback.error_type, fallback.retryable],
        "policy": policy,
        "metrics": {
            "contentType": CONTENT_TYPE,
            "defaults": {"port": d.port, "host": d.host, "timeoutMs": d.timeout.as_millis() as u64,
                         "maxHeaderBytes": d.max_head, "maxConnections": d.max_connections},
        },
    }))
}

/// A session policy (JSON object in the input) as its `AGENT_WATCHDOG_*` variables:
/// `{"env": {…}}`, or `{"error", "typeError"}` (length of the text).
#[no_mangle]
pub extern "C" fn rules_env(len: u32) -> u32 {
    let out = match input_json(len) {
        Value::Object(policy) => match env_for(&policy) {
            Ok(env) => json!({"env": env}),
            Err(e) => error(&e.message, e.type_error),
        },
        _ => error("policy: expected an object", true),
    };
    answer(&out)
}

/// The watchdog's kill, if the message (JSON in the input) is its synthetic result:
/// `{"kind", "reason"}` (length of the text), else -1.
#[no_mangle]
pub extern "C" fn rules_kill(len: u32) -> i32 {
    let kill = with(|s| {
        let view = LineView::parse(s.input(len)).ok()?;
        SyntheticKill::read(&view)
    });
    match kill {
        Some(k) => answer(&json!({"kind": k.kind, "reason": k.reason})) as i32,
        None => -1,
    }
}

/// The environment (a JSON object of strings in the input) as the drop-in reads it.
fn env_of(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `{"env": {…}, "margin": …}` (the input): the session's environment (the
/// `AGENT_WATCHDOG_*` variables over the worker's) and the margin (a duration's text, or
/// seconds).
fn env_and_margin(len: u32) -> Result<(BTreeMap<String, String>, Duration), String> {
    let v = input_json(len);
    let margin = match &v["margin"] {
        Value::Null => Duration::from_secs(60),
        Value::String(t) => t
            .parse::<HumanDuration>()
            .map(HumanDuration::get)
            .map_err(|e| format!("margin: {e}"))?,
        Value::Number(n) => n
            .as_f64()
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| format!("margin: must be a duration >= 0, got {n}"))?,
        other => return Err(format!("margin: expected a duration, got {other}")),
    };
    Ok((env_of(&v["env"]), margin))
}

/// The Temporal activity timeouts of a policy (`{"env": {…}, "margin": …}` in the input):
/// `{"heartbeatTimeout", "startToCloseTimeout"}` in ms (`null` without a ceiling), or
/// `{"error"}` (length of the text).
#[no_mangle]
pub extern "C" fn rules_timeouts(len: u32) -> u32 {
    let out = env_and_margin(len).and_then(|(env, margin)| {
        let p =
            SessionPolicy::from_env(&env).map_err(|e| format!("invalid watchdog policy: {e}"))?;
        let (hb, stc) = p.activity_timeouts(margin);
        Ok(json!({"heartbeatTimeout": ms(hb), "startToCloseTimeout": stc.map(ms)}))
    });
    answer(&out.unwrap_or_else(|e| error(e, false)))
}

/// A fold of one SDK session that starts at `now` (`wall`: epoch ms then) under the policy of
/// its environment, with the margin added to the kill ladder (`{"env": {…}, "margin": …}` in
/// the input): its index, or -1 with the error in the output.
#[no_mangle]
pub extern "C" fn rules_run_new(now: f64, wall: f64, len: u32) -> i32 {
    let wall = if wall.is_finite() && wall > 0.0 {
        wall as u64
    } else {
        0
    };
    let made = env_and_margin(len)
        // The TypeScript SDK yields every keep-alive line.
        .and_then(|(env, margin)| SdkRun::from_env(clock::instant(now), wall, &env, margin, true));
    match made {
        Ok(run) => RUNS
            .with(|r| r.borrow_mut().insert(run))
            .map_or(-1, |i| i as i32),
        Err(e) => {
            with(|s| s.answer(&e));
            -1
        }
    }
}

/// Drop a fold.
#[no_mangle]
pub extern "C" fn rules_run_free(r: u32) {
    RUNS.with(|runs| runs.borrow_mut().remove(r));
}

fn on_run<R>(r: u32, or: R, f: impl FnOnce(&mut SdkRun) -> R) -> R {
    RUNS.with(|runs| runs.borrow_mut().get_mut(r).map_or(or, f))
}

/// Fold one message (JSON in the input) read at `now`: bit 0, a progress was confirmed
/// ([`rules_run_progress`]); bit 1, the turn was interrupted; bit 2, the watchdog's kill came.
#[no_mangle]
pub extern "C" fn rules_run_observe(r: u32, len: u32, now: f64) -> i32 {
    let line = with(|s| s.input(len).to_vec());
    on_run(r, 0, |run| {
        let step = run.observe(clock::instant(now), &line);
        i32::from(step.progress.is_some())
            | i32::from(step.interrupted) << 1
            | i32::from(step.kill) << 2
    })
}

/// The last confirmed progress, epoch ms (`NaN`: none).
#[no_mangle]
pub extern "C" fn rules_run_progress(r: u32) -> f64 {
    on_run(r, f64::NAN, |run| {
        run.last_progress()
            .map_or(f64::NAN, |at| run.wall_ms(at) as f64)
    })
}

/// Claude Code's session id in the output (its length), or -1 before one was read.
#[no_mangle]
pub extern "C" fn rules_run_session(r: u32) -> i32 {
    let id = on_run(r, None, |run| run.session_id().map(str::to_owned));
    id.map_or(-1, |id| with(|s| s.answer(&id)) as i32)
}

/// The host's permission callback was called at `now`: its id, for [`rules_run_answered`]
/// (the SDK answers Claude Code's `can_use_tool` itself; until the answer a human wait holds
/// the clocks).
#[no_mangle]
pub extern "C" fn rules_run_asked(r: u32, now: f64) -> f64 {
    on_run(r, 0.0, |run| {
        run.permission_asked(clock::instant(now)) as f64
    })
}

/// The permission callback `asked` answered at `now`.
#[no_mangle]
pub extern "C" fn rules_run_answered(r: u32, asked: f64, now: f64) {
    on_run(r, (), |run| {
        run.permission_answered(clock::instant(now), asked as u64)
    });
}

/// Whether the session is alive at `now` (1) or the watchdog beside it failed to end it (0).
#[no_mangle]
pub extern "C" fn rules_run_alive(r: u32, now: f64) -> i32 {
    on_run(r, 0, |run| i32::from(run.alive(clock::instant(now))))
}

/// The stream ended at `now`: how the session ended, as JSON (length of the text): `end` (its
/// name), `message` (one sentence), `failure` (`{type, retryable}`, `null` for a success), `kill` (`{kind, reason}`),
/// `result` (the last result's `subtype`, `terminal_reason`, `num_turns`, `total_cost_usd`).
#[no_mangle]
pub extern "C" fn rules_run_finish(r: u32, now: f64) -> u32 {
    let out = on_run(r, Value::Null, |run| {
        let e = run.finish(clock::instant(now));
        json!({
            "end": e.name(),
            "message": e.message(),
            "failure": e.failure.map(|f| json!({"type": f.error_type, "retryable": f.retryable})),
            "kill": e.kill.map(|k| json!({"kind": k.kind, "reason": k.reason})),
            "result": e.result.map(|r| json!({
                "subtype": r.subtype, "terminal_reason": r.terminal_reason,
                "num_turns": r.num_turns, "total_cost_usd": r.total_cost_usd,
            })),
        })
    });
    answer(&out)
}

/// The answer to a request `METHOD TARGET` (the input): `{"status", "contentType", "allow",
/// "body"}` (`body` `null`: the metrics), length of the text.
#[no_mangle]
pub extern "C" fn rules_metrics_answer(len: u32) -> u32 {
    let text = with(|s| String::from_utf8_lossy(s.input(len)).into_owned());
    let (method, target) = text.split_once(' ').unwrap_or((&text, ""));
    let a = Request::of(method, target).answer();
    answer(
        &json!({"status": a.status, "contentType": a.content_type, "allow": a.allow,
                   "body": a.body}),
    )
}

/// `serveMetrics()`'s options (a JSON object in the input, the defaults under unset ones)
/// checked by the endpoint's rules: `{"options": {…}}` or `{"error"}` (length of the text).
#[no_mangle]
pub extern "C" fn rules_metrics_options(len: u32) -> u32 {
    let given = input_json(len);
    let d = ServeBounds::default();
    // A value checked by `rule` as a number, named `k`; a value that is no number is refused
    // as JavaScript shows it (`String(value)`).
    fn field<T>(
        given: &Value,
        k: &str,
        default: f64,
        rule: impl Fn(f64) -> Result<T, InvalidValue>,
    ) -> Result<T, String> {
        let (n, shown) = match given.get(k) {
            None => (default, None),
            Some(Value::Number(n)) => (n.as_f64().unwrap_or(f64::NAN), None),
            Some(Value::String(s)) => (f64::NAN, Some(s.clone())),
            Some(other) => (f64::NAN, Some(other.to_string())),
        };
        rule(n).map_err(|mut e| {
            if let Some(shown) = shown {
                e.value = shown;
            }
            format!("{k} {e}")
        })
    }
    let checked = (|| -> Result<Value, String> {
        let port = field(&given, "port", f64::from(d.port), ServeBounds::port)?;
        let host = match given.get("host") {
            None => d.host.clone(),
            Some(Value::String(s)) => ServeBounds::host(s).map_err(|e| format!("host {e}"))?,
            Some(other) => return Err(format!("host must be a non-empty string, got {other}")),
        };
        let default_ms = d.timeout.as_secs_f64() * 1000.0;
        let timeout = field(&given, "timeoutMs", default_ms, |ms| {
            ServeBounds::timeout_secs(ms / 1000.0).map_err(|mut e| {
                e.value = format!("{ms}");
                e
            })
        })?;
        let head = field(
            &given,
            "maxHeaderBytes",
            d.max_head as f64,
            ServeBounds::count,
        )?;
        let conns = field(
            &given,
            "maxConnections",
            d.max_connections as f64,
            ServeBounds::count,
        )?;
        Ok(
            json!({"port": port, "host": host, "timeoutMs": timeout.as_secs_f64() * 1000.0,
                  "maxHeaderBytes": head, "maxConnections": conns}),
        )
    })();
    answer(&match checked {
        Ok(o) => json!({"options": o}),
        Err(e) => error(e, false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> u32 {
        let _ = crate::abi::input(text.len() as u32);
        with(|s| s.input.copy_from_slice(text.as_bytes()));
        text.len() as u32
    }

    fn out(len: u32) -> Value {
        with(|s| serde_json::from_slice(&s.output[..len as usize]).unwrap())
    }

    #[test]
    fn the_tables_and_the_policy_cross_as_json() {
        let t = out(rules_tables());
        assert!(t["afterKillPrompt"]
            .as_str()
            .unwrap()
            .starts_with("The previous run was stopped"));
        assert_eq!(t["failures"]["ceiling"], json!(["WatchdogCeiling", false]));
        assert_eq!(t["fallback"], json!(["WatchdogKill", true]));
        assert_eq!(t["metrics"]["defaults"]["port"], 9464);
        let env = out(rules_env(write(
            r#"{"noProgress": 90, "writeTools": ["Write"]}"#,
        )));
        assert_eq!(env["env"]["AGENT_WATCHDOG_NO_PROGRESS"], "90");
        let bad = out(rules_env(write(r#"{"idle": "0s"}"#)));
        assert_eq!(bad["typeError"], false, "{bad}");
        let unknown = out(rules_env(write(r#"{"idel": "5m"}"#)));
        assert_eq!(unknown["typeError"], true);
        let t = out(rules_timeouts(write(
            r#"{"env": {"AGENT_WATCHDOG_CEILING": "1h"}, "margin": "1m"}"#,
        )));
        assert_eq!(t["heartbeatTimeout"], (1800 + 5 + 60) * 1000);
        assert_eq!(t["startToCloseTimeout"], (3600 + 5 + 60) * 1000);
    }

    #[test]
    fn a_fold_reads_a_session_and_ends_as_run_does() {
        let r = rules_run_new(0.0, 1.9e12, write(r#"{"env": {}, "margin": 1}"#)) as u32;
        let init = r#"{"type":"system","subtype":"init","session_id":"s-1"}"#;
        assert_eq!(rules_run_observe(r, write(init), 0.0), 0);
        assert_eq!(
            rules_run_observe(
                r,
                write(r#"{"type":"assistant","message":{"content":[]}}"#),
                5.0
            ),
            1
        );
        assert_eq!(rules_run_progress(r), 1.9e12);
        let len = rules_run_session(r);
        assert_eq!(with(|s| s.output[..len as usize].to_vec()), b"s-1");
        assert_eq!(rules_run_alive(r, 10.0), 1);
        let kill = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"watchdog_linger","result":"killed"}"#;
        assert_eq!(rules_run_observe(r, write(kill), 20.0), 4);
        let end = out(rules_run_finish(r, 30.0));
        assert_eq!(end["end"], "linger");
        assert_eq!(
            end["failure"],
            json!({"type": "WatchdogLinger", "retryable": true})
        );
        rules_run_free(r);
        assert_eq!(rules_run_alive(r, 40.0), 0, "a freed fold is nothing");
        let bad = r#"{"env": {"AGENT_WATCHDOG_IDLE": "0"}}"#;
        assert_eq!(rules_run_new(0.0, 0.0, write(bad)), -1);
        let t = out(rules_timeouts(write(r#"{"env": {}, "margin": "x"}"#)));
        assert!(
            t["error"].as_str().unwrap().starts_with("margin: must be"),
            "{t}"
        );
    }

    #[test]
    fn the_metrics_endpoint_answers_and_checks_as_every_host_does() {
        let a = out(rules_metrics_answer(write("POST /metrics")));
        assert_eq!(
            (a["status"].as_u64(), a["allow"].as_str()),
            (Some(405), Some("GET, HEAD"))
        );
        let a = out(rules_metrics_answer(write("GET /metrics?x")));
        assert_eq!(
            (a["status"].as_u64(), a["body"].is_null()),
            (Some(200), true)
        );
        let o = out(rules_metrics_options(write(r#"{"port": 0}"#)));
        assert_eq!(o["options"]["maxConnections"], 64);
        let e = out(rules_metrics_options(write(r#"{"port": 70000}"#)));
        assert_eq!(
            e["error"],
            "port must be an integer in [0, 65535], got 70000"
        );
        assert!(rules_kill(write(r#"{"type":"result","subtype":"success"}"#)) < 0);
    }
}

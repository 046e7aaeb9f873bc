//! What follows from the rules, for the Python package's helpers (`watchdog_env`,
//! `watchdog_kill`, `agent_sdk_watchdog.temporal`, `serve_metrics`): each a call into the one
//! Rust home of its rule.
//!
//! - `watchdog_env(policy)`: a session's policy as its `AGENT_WATCHDOG_*` variables
//!   (`watchdog_host::options::env_for`): `TypeError` for a value of the wrong type or an
//!   unknown field, `ValueError` for one its rule rejects.
//! - `watchdog_kill(message)`: the watchdog's kill, read from its synthetic result.
//! - `activity_timeouts(env, margin)`: the Temporal activity timeouts of a policy.
//! - `SdkRun`: the SDK-run fold ([`watchdog_host::sdk_run::SdkRun`]) over the SDK's message
//!   objects (written as lines by the `messages` module); times are seconds on the caller's
//!   clock, as everywhere in this module.
//! - `rules_tables()`: the continuation prompt, the failure table, the policy's options, the
//!   `/metrics` endpoint's defaults; `metrics_bounds(...)`: the endpoint's values checked.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};
use serde_json::{Map, Value};
use watchdog_core::ending::{failure, FAILURES};
use watchdog_core::recovery::{Recovery, Trigger};
use watchdog_core::synthetic::SyntheticKill;
use watchdog_core::LineView;
use watchdog_host::metrics::bounds::ServeBounds;
use watchdog_host::options::{env_for, session_options, SessionPolicy};
use watchdog_host::sdk_run::SdkRun as Fold;

use crate::messages::{Kinds, LineBuf};

/// A policy value as JSON: `None`, bools, numbers, strings, a `timedelta` (its seconds), a
/// path (`os.fspath`), any other iterable (a list of names); anything else is a `TypeError`.
fn policy_value(key: &str, v: &Bound<'_, PyAny>) -> PyResult<Value> {
    let py = v.py();
    if v.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if v.cast::<PyInt>().is_ok() || v.cast::<PyFloat>().is_ok() {
        let n: f64 = v.extract()?;
        return Ok(
            serde_json::Number::from_f64(n).map_or(Value::String(n.to_string()), Value::Number)
        );
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(t) = v.getattr(intern!(py, "total_seconds")) {
        let n: f64 = t.call0()?.extract()?;
        return Ok(
            serde_json::Number::from_f64(n).map_or(Value::String(n.to_string()), Value::Number)
        );
    }
    if let Ok(f) = v.getattr(intern!(py, "__fspath__")) {
        return Ok(Value::String(f.call0()?.extract()?));
    }
    if let Ok(items) = v.try_iter() {
        let mut out = Vec::new();
        for item in items {
            out.push(policy_value(key, &item?)?);
        }
        return Ok(Value::Array(out));
    }
    Err(PyTypeError::new_err(format!(
        "{key}: expected a duration, a number, a boolean, a path or a list of names, got {}",
        v.get_type().name()?
    )))
}

/// The `AGENT_WATCHDOG_*` variables of a session's policy (`watchdog_env`'s fields).
#[pyfunction]
pub(crate) fn watchdog_env(policy: &Bound<'_, PyDict>) -> PyResult<BTreeMap<&'static str, String>> {
    let mut fields = Map::new();
    for (k, v) in policy.iter() {
        let key: String = k.extract()?;
        let value = policy_value(&key, &v)?;
        fields.insert(key, value);
    }
    env_for(&fields).map_err(|e| {
        if e.type_error {
            PyTypeError::new_err(e.message)
        } else {
            PyValueError::new_err(e.message)
        }
    })
}

/// `message` (an SDK message object, a stream-json `dict` or line) written as the line the core
/// reads.
fn line_of(message: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let mut buf = LineBuf::default();
    Kinds::default().write_line(message, &mut buf)?;
    Ok(buf.bytes().to_vec())
}

/// The watchdog's kill `(kind, reason)`, if `message` is its synthetic result; else `None`.
#[pyfunction]
pub(crate) fn watchdog_kill(message: &Bound<'_, PyAny>) -> Option<(String, String)> {
    let line = line_of(message).ok()?;
    let view = LineView::parse(&line).ok()?;
    SyntheticKill::read(&view).map(|k| (k.kind, k.reason))
}

fn env_map(env: &Bound<'_, PyDict>) -> PyResult<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (k, v) in env.iter() {
        if let (Ok(k), Ok(v)) = (k.extract::<String>(), v.extract::<String>()) {
            out.insert(k, v);
        }
    }
    Ok(out)
}

fn secs(what: &str, s: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| PyValueError::new_err(format!("{what}: expected a duration >= 0, got {s}")))
}

/// `(heartbeat_timeout, start_to_close_timeout)` in seconds (`None` without a ceiling) of the
/// policy the environment `env` sets, plus `margin` seconds.
#[pyfunction]
pub(crate) fn activity_timeouts(
    env: &Bound<'_, PyDict>,
    margin: f64,
) -> PyResult<(f64, Option<f64>)> {
    let policy = SessionPolicy::from_env(env_map(env)?)
        .map_err(|e| PyValueError::new_err(format!("invalid watchdog policy: {e}")))?;
    let (hb, stc) = policy.activity_timeouts(secs("margin", margin)?);
    Ok((hb.as_secs_f64(), stc.map(|d| d.as_secs_f64())))
}

/// The rules' tables: `after_kill_prompt`, `failures` (`{ending: (type, retryable)}`),
/// `fallback` (a kill the table does not name), `policy` (the session policy's option names),
/// `metrics` (the `/metrics` endpoint's defaults).
#[pyfunction]
pub(crate) fn rules_tables(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(
        "after_kill_prompt",
        Recovery::default().prompt(Trigger::AfterKill),
    )?;
    let failures = PyDict::new(py);
    for (name, f) in FAILURES {
        failures.set_item(name, (f.error_type, f.retryable))?;
    }
    d.set_item("failures", failures)?;
    let f = failure("");
    d.set_item("fallback", (f.error_type, f.retryable))?;
    let names: Vec<&str> = session_options().map(|o| o.name).collect();
    d.set_item("policy", names)?;
    let b = ServeBounds::default();
    let m = PyDict::new(py);
    m.set_item("host", b.host)?;
    m.set_item("port", b.port)?;
    m.set_item("timeout", b.timeout.as_secs_f64())?;
    m.set_item("max_head", b.max_head)?;
    m.set_item("max_connections", b.max_connections)?;
    d.set_item("metrics", m)?;
    Ok(d)
}

/// `v` checked by `rule` as a number (a bool or a non-number is rejected, shown as Python
/// shows it), the error naming `name`.
fn checked<T>(
    name: &str,
    v: &Bound<'_, PyAny>,
    rule: fn(f64) -> Result<T, watchdog_core::config::InvalidValue>,
) -> PyResult<T> {
    let n = if v.cast::<PyBool>().is_ok() {
        None
    } else {
        v.extract::<f64>().ok()
    };
    let e = match n.map(rule) {
        Some(Ok(t)) => return Ok(t),
        Some(Err(e)) => e,
        None => {
            let mut e = rule(f64::NAN).err().expect("NaN is never valid");
            e.value = v.repr().map_or_else(|_| "?".into(), |r| r.to_string());
            e
        }
    };
    Err(PyValueError::new_err(format!("{name}: {e}")))
}

/// `serve_metrics`'s values checked by the endpoint's rules: `(host, port, timeout seconds,
/// max_head, max_connections)`, or `ValueError` naming the first bad one.
#[pyfunction]
pub(crate) fn metrics_bounds(
    host: &Bound<'_, PyAny>,
    port: &Bound<'_, PyAny>,
    timeout: &Bound<'_, PyAny>,
    max_head: &Bound<'_, PyAny>,
    max_connections: &Bound<'_, PyAny>,
) -> PyResult<(String, u16, f64, usize, usize)> {
    let host = ServeBounds::host(&host.extract::<String>().unwrap_or_default())
        .map_err(|e| PyValueError::new_err(format!("host: {e}")))?;
    let port = checked("port", port, ServeBounds::port)?;
    let timeout = checked("timeout", timeout, ServeBounds::timeout_secs)?;
    let max_head = checked("max_head", max_head, ServeBounds::count)?;
    let max_connections = checked("max_connections", max_connections, ServeBounds::count)?;
    Ok((host, port, timeout.as_secs_f64(), max_head, max_connections))
}

/// The fold and the clock it reads times on.
struct RunState {
    fold: Fold,
    kinds: Kinds,
    buf: LineBuf,
    base: Instant,
    epoch: f64,
}

impl RunState {
    fn at(&self, now: f64) -> Instant {
        let d = now - self.epoch;
        if d > 0.0 {
            self.base + Duration::try_from_secs_f64(d).unwrap_or(Duration::from_secs(1 << 40))
        } else {
            self.base
        }
    }
}

/// One SDK session, folded (`watchdog_host::sdk_run`): `SdkRun(env, margin, now, wall)` under
/// the policy of the session's environment `env`; `now` is seconds on the caller's clock
/// (`time.monotonic()`), `wall` the epoch seconds then.
#[pyclass(module = "agent_sdk_watchdog._native", frozen)]
pub(crate) struct SdkRun {
    state: Mutex<RunState>,
}

impl SdkRun {
    fn with<R>(&self, f: impl FnOnce(&mut RunState) -> R) -> R {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }
}

#[pymethods]
impl SdkRun {
    #[new]
    fn new(env: &Bound<'_, PyDict>, margin: f64, now: f64, wall: f64) -> PyResult<Self> {
        let base = Instant::now();
        let wall_ms = if wall.is_finite() && wall > 0.0 {
            (wall * 1000.0) as u64
        } else {
            0
        };
        // The Python SDK drops `tool_progress` (and every type it does not know): the fold
        // judges no progress alone.
        let fold = Fold::from_env(
            base,
            wall_ms,
            &env_map(env)?,
            secs("margin", margin)?,
            false,
        )
        .map_err(|e| PyValueError::new_err(format!("invalid watchdog policy: {e}")))?;
        Ok(SdkRun {
            state: Mutex::new(RunState {
                fold,
                kinds: Kinds::default(),
                buf: LineBuf::default(),
                base,
                epoch: now,
            }),
        })
    }

    /// Fold one message read at `now`: `(progress, interrupted, kill)`.
    fn observe(&self, message: &Bound<'_, PyAny>, now: f64) -> PyResult<(bool, bool, bool)> {
        self.with(|s| {
            s.kinds.write_line(message, &mut s.buf)?;
            let at = s.at(now);
            let step = s.fold.observe(at, s.buf.bytes());
            Ok((step.progress.is_some(), step.interrupted, step.kill))
        })
    }

    /// The host's permission callback was called at `now`: its id, for
    /// `permission_answered` (a human wait holds the clocks until then).
    fn permission_asked(&self, now: f64) -> u64 {
        self.with(|s| {
            let at = s.at(now);
            s.fold.permission_asked(at)
        })
    }

    /// The permission callback `asked` answered at `now`.
    fn permission_answered(&self, asked: u64, now: f64) {
        self.with(|s| {
            let at = s.at(now);
            s.fold.permission_answered(at, asked);
        });
    }

    /// The last confirmed progress, epoch seconds; `None` before any.
    #[getter]
    fn last_progress(&self) -> Option<f64> {
        self.with(|s| {
            let at = s.fold.last_progress()?;
            Some(s.fold.wall_ms(at) as f64 / 1000.0)
        })
    }

    /// Claude Code's session id, once a message named it.
    #[getter]
    fn session_id(&self) -> Option<String> {
        self.with(|s| s.fold.session_id().map(str::to_owned))
    }

    /// The watchdog's kill `(kind, reason)`, once its synthetic result came.
    #[getter]
    fn kill(&self) -> Option<(String, String)> {
        self.with(|s| s.fold.kill().map(|k| (k.kind.clone(), k.reason.clone())))
    }

    /// Whether the session is alive at `now`: the watchdog beside the host still lets it run
    /// (every hold included), or its kill may still be on its way.
    fn alive(&self, now: f64) -> bool {
        self.with(|s| {
            let at = s.at(now);
            s.fold.alive(at)
        })
    }

    /// The stream ended at `now`: `{"end", "message", "failure": (type, retryable) | None, "kill":
    /// (kind, reason) | None, "result": {...} | None}`.
    fn finish<'py>(&self, py: Python<'py>, now: f64) -> PyResult<Bound<'py, PyDict>> {
        let e = self.with(|s| {
            let at = s.at(now);
            s.fold.finish(at)
        });
        let d = PyDict::new(py);
        d.set_item("end", e.name())?;
        d.set_item("message", e.message())?;
        d.set_item("failure", e.failure.map(|f| (f.error_type, f.retryable)))?;
        d.set_item("kill", e.kill.map(|k| (k.kind, k.reason)))?;
        let result = match e.result {
            Some(r) => {
                let rd = PyDict::new(py);
                rd.set_item("subtype", r.subtype)?;
                rd.set_item("terminal_reason", r.terminal_reason)?;
                Some(rd)
            }
            None => None,
        };
        d.set_item("result", result)?;
        Ok(d)
    }
}

/// Add this module's functions and class to `m`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SdkRun>()?;
    m.add_function(wrap_pyfunction!(watchdog_env, m)?)?;
    m.add_function(wrap_pyfunction!(watchdog_kill, m)?)?;
    m.add_function(wrap_pyfunction!(activity_timeouts, m)?)?;
    m.add_function(wrap_pyfunction!(rules_tables, m)?)?;
    m.add_function(wrap_pyfunction!(metrics_bounds, m)?)?;
    Ok(())
}

//! `agent_sdk_watchdog._native`: the in-process Python API's engine, on `watchdog-core`.
//!
//! The Python layer (`agent_sdk_watchdog/inprocess.py`) owns the clock, the timer and the
//! callbacks; this module owns the policy: one [`Registry`] per watchdog, fed with what the
//! Python Agent SDK's `query()` yields (its message objects, read here without converting them
//! in Python), plus the rate-limit monitor, the reading formatter and the warning de-dup's
//! once-per-category memory.
//!
//! Time: every call takes `now` as seconds on the caller's clock (a float); the registry sees
//! `base + (now - epoch)`, so a virtual clock works as well as `time.monotonic()`.
//!
//! `unsafe`: this crate writes none, but the `#[pymodule]` / `#[pyclass]` / `#[pymethods]`
//! macros expand to `unsafe` FFI glue, so `#![forbid(unsafe_code)]` cannot be set here;
//! `#![deny(unsafe_code)]` is not usable either (the lint fires inside the expansions).

mod messages;
mod rate_limit;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use watchdog_core::config::{format_duration, parse_duration};
use watchdog_core::{
    ConfigError, Event, Kill, Limits, LineView, Registry, SessionConfig, SessionId,
};

use messages::{Kinds, LineBuf};

fn value_error(e: ConfigError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A duration option in seconds: finite and >= 0 here, then the core's rule (`> 0`, at most
/// 365 days) decides, in the core's words.
fn seconds(option: &'static str, value: f64) -> PyResult<Duration> {
    // Not a number of seconds the core can hold (or 0, which the core would show as `0ns`):
    // the same rule, shown with the value as given.
    if value.is_nan() || value <= 0.0 || value.is_infinite() {
        let shown = if value.is_nan() {
            "NaN".to_owned()
        } else {
            format!("{value}")
        };
        return Err(PyValueError::new_err(format!(
            "{option} must be a duration > 0, got {shown}"
        )));
    }
    Duration::try_from_secs_f64(value)
        .map_err(|_| PyValueError::new_err(format!("{option} must be a duration > 0, got {value}")))
}

/// Parse a duration such as `90s`, `10m`, `1h30m`, `250ms` into seconds (the core's syntax).
#[pyfunction]
fn parse_duration_seconds(option: &str, text: &str) -> PyResult<f64> {
    parse_duration(text)
        .map(|d| d.as_secs_f64())
        .map_err(|e| PyValueError::new_err(format!("{option} {e}")))
}

/// The core's defaults, as Python values (seconds for durations).
#[pyfunction]
fn watchdog_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = Limits::default();
    let out = PyDict::new(py);
    out.set_item("idle", d.idle().as_secs_f64())?;
    out.set_item("no_progress", d.no_progress().as_secs_f64())?;
    out.set_item("startup", d.startup().as_secs_f64())?;
    out.set_item("linger", d.linger().as_secs_f64())?;
    out.set_item("ceiling", d.ceiling().map(|c| c.as_secs_f64()))?;
    out.set_item("extend_factor", d.extend_factor())?;
    out.set_item("high_utilization", d.high_utilization())?;
    out.set_item("warn_at", d.warn_at())?;
    let tools: Vec<&str> = d.write_tools().iter().map(|t| &**t).collect();
    out.set_item("write_tools", PyTuple::new(py, tools)?)?;
    Ok(out)
}

/// Per-session state the core does not keep: the tools in flight (from the hooks), the
/// permission requests open (from a wrapped `can_use_tool`).
struct Extra {
    /// The core's id (ids are made only by the registry: the number the caller holds is
    /// looked up here).
    sid: SessionId,
    in_flight: Vec<Box<str>>,
}

/// Flags returned by every feed: what the Python layer must do next.
const EVENTS: u32 = 1;
const REARM: u32 = 2;

/// One watchdog: a registry and its sessions' extra state.
/// One watchdog: its state behind a mutex, so the timer thread and the host's threads can
/// call it at any time (a call that finds it busy waits without the GIL).
#[pyclass(module = "agent_sdk_watchdog._native", frozen)]
struct Core {
    inner: Mutex<Inner>,
}

impl Core {
    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, Inner> {
        loop {
            match self.inner.try_lock() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(e)) => return e.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    py.detach(|| drop(self.inner.lock()));
                }
            }
        }
    }
}

/// One watchdog's state (behind the [`Core`] object's mutex).
struct Inner {
    registry: Registry,
    base: Instant,
    epoch: f64,
    /// The instant the timer sleeps until (`None`: not sleeping on a deadline).
    armed: Option<f64>,
    pending: Vec<Event>,
    extra: HashMap<u64, Extra>,
    kinds: Kinds,
    buf: LineBuf,
    next_request: u64,
}

impl Inner {
    fn at(&self, now: f64) -> Instant {
        let d = now - self.epoch;
        if d.is_finite() && d > 0.0 {
            self.base + Duration::try_from_secs_f64(d).unwrap_or(Duration::from_secs(1 << 40))
        } else {
            self.base
        }
    }

    fn secs(&self, at: Instant) -> f64 {
        self.epoch + at.saturating_duration_since(self.base).as_secs_f64()
    }

    /// Collect the registry's events; tell the caller whether there are any and whether the
    /// next deadline is now earlier than the one the timer sleeps on.
    fn flags(&mut self) -> u32 {
        while let Some(e) = self.registry.poll_event() {
            if let Event::Killed(k) = &e {
                if let Some(x) = self.extra.get_mut(&k.id.as_u64()) {
                    x.in_flight.clear();
                }
            }
            self.pending.push(e);
        }
        let mut f = 0;
        if !self.pending.is_empty() {
            f |= EVENTS;
        }
        if let Some(t) = self.registry.poll_timeout() {
            if self.armed.is_none_or(|a| self.secs(t) < a) {
                f |= REARM;
            }
        }
        f
    }

    /// `None`: now on the real clock (`Instant::now()`, the same monotonic clock as Python's
    /// `time.monotonic()`), without a call back into Python for it.
    fn at_or_now(&self, now: Option<f64>) -> Instant {
        now.map_or_else(Instant::now, |n| self.at(n))
    }

    /// Feed the line in `buf`: `trusted` when this module wrote it (valid JSON by
    /// construction: skimmed, not validated again).
    fn feed(&mut self, id: u64, now: Option<f64>, trusted: bool) -> PyResult<u32> {
        let Some(sid) = self.sid(id) else {
            return Ok(0);
        };
        let at = self.at_or_now(now);
        let line = self.buf.bytes();
        match LineView::parse_validated(line).filter(|_| trusted) {
            Some(view) => {
                self.registry.observe(at, sid, &view);
            }
            None => {
                self.registry.observe_line(at, sid, line);
            }
        }
        Ok(self.flags())
    }

    fn kill_tuple<'py>(&self, py: Python<'py>, k: &Kill) -> PyResult<Bound<'py, PyTuple>> {
        (
            k.kind.as_str(),
            kill_reason(k),
            self.secs(k.at),
            k.elapsed.as_secs_f64(),
            k.since_progress.as_secs_f64(),
            k.since_tool.as_secs_f64(),
        )
            .into_pyobject(py)
    }
}

fn kill_reason(k: &Kill) -> String {
    let d = format_duration;
    match k.kind.as_str() {
        "ceiling" => format!("the session reached its ceiling (age {})", d(k.elapsed)),
        "startup" => format!("no output at all since the start ({})", d(k.elapsed)),
        "linger" => format!(
            "a result came, then nothing new for {} and the stream did not end",
            d(k.since_progress)
        ),
        "idle" => format!(
            "no output for {} (no message, no tool in flight)",
            d(k.since_keepalive)
        ),
        _ => format!(
            "no progress for {} (keep-alives or a tool in flight only)",
            d(k.since_progress)
        ),
    }
}

impl Inner {
    #[allow(clippy::too_many_arguments)]
    fn new(
        epoch: f64,
        idle: f64,
        no_progress: f64,
        startup: f64,
        linger: f64,
        ceiling: Option<f64>,
        extend_factor: f64,
        high_utilization: f64,
        warn_at: f64,
        write_tools: Vec<String>,
    ) -> PyResult<Self> {
        let limits = limits(
            Limits::default(),
            idle,
            no_progress,
            startup,
            linger,
            ceiling,
            extend_factor,
            high_utilization,
            warn_at,
        )?
        .with_write_tools(write_tools);
        Ok(Inner {
            registry: Registry::new(limits),
            base: Instant::now(),
            epoch,
            armed: None,
            pending: Vec::new(),
            extra: HashMap::new(),
            kinds: Kinds::default(),
            buf: LineBuf::default(),
            next_request: 0,
        })
    }

    /// Register a session; `ceiling` overrides the watchdog's (None: the watchdog's).
    fn register(&mut self, now: f64, ceiling: Option<f64>) -> PyResult<(u64, u32)> {
        let config = match ceiling {
            None => SessionConfig::default(),
            Some(c) => SessionConfig::default().with_limits(
                self.registry
                    .limits()
                    .clone()
                    .with_ceiling(Some(seconds("hard_ceiling", c)?))
                    .map_err(|e| {
                        let mut e = e;
                        e.option = "hard_ceiling";
                        value_error(e)
                    })?,
            ),
        };
        let at = self.at(now);
        let sid = self.registry.register(at, config);
        let id = sid.as_u64();
        self.extra.insert(
            id,
            Extra {
                sid,
                in_flight: Vec::new(),
            },
        );
        Ok((id, self.flags()))
    }

    /// Feed one message `query()` yielded (any SDK message object, a raw stream-json `dict`,
    /// or a raw line as `bytes`/`str`).
    fn observe(&mut self, id: u64, message: &Bound<'_, PyAny>, now: Option<f64>) -> PyResult<u32> {
        let (in_flight_end, trusted) = self.kinds.write_line(message, &mut self.buf)?;
        if in_flight_end {
            // A result ends the turn: no tool is in flight any more.
            if let Some(x) = self.extra.get_mut(&id) {
                x.in_flight.clear();
            }
        }
        self.feed(id, now, trusted)
    }

    /// A tool boundary by hand (`activity(tool_name)`): progress; a write tool's completes
    /// the first write.
    fn activity(&mut self, id: u64, tool_name: Option<&str>, now: f64) -> u32 {
        let Some(sid) = self.sid(id) else {
            return 0;
        };
        let at = self.at(now);
        self.registry.tool_boundary(at, sid, tool_name);
        self.flags()
    }

    /// A stream frame by hand: progress.
    fn stream(&mut self, id: u64, now: f64) -> PyResult<u32> {
        self.buf
            .set(br#"{"type":"stream_event","event":{"type":"content_block_delta"}}"#);
        self.feed(id, Some(now), true)
    }

    /// A keep-alive by hand (a sign of life, not progress; a settled session stays settled).
    fn heartbeat(&mut self, id: u64, now: f64) -> PyResult<u32> {
        self.buf.set(br#"{"type":"tool_progress"}"#);
        self.feed(id, Some(now), true)
    }

    /// Settle by hand, as a result would.
    fn settle(&mut self, id: u64, now: f64) -> u32 {
        let Some(sid) = self.sid(id) else {
            return 0;
        };
        let at = self.at(now);
        self.registry.settle(at, sid);
        self.flags()
    }

    /// A tool started (`PreToolUse`): progress, and until its end the session counts as
    /// receiving the CLI's tool heartbeats (the idle rule is held off; the no-progress cap and
    /// the ceiling run).
    fn tool_start(&mut self, id: u64, tool_use_id: &str, now: f64) -> u32 {
        let Some(sid) = self.sid(id) else {
            return 0;
        };
        let at = self.at(now);
        self.registry.tool_boundary(at, sid, None);
        if self.registry.kill(sid).is_some() {
            return self.flags();
        }
        if let Some(x) = self.extra.get_mut(&id) {
            if x.in_flight.len() < 64 && !x.in_flight.iter().any(|t| &**t == tool_use_id) {
                x.in_flight.push(tool_use_id.into());
            }
        }
        self.flags()
    }

    /// A tool ended (`PostToolUse` with its name, `PostToolUseFailure` with none).
    fn tool_end(&mut self, id: u64, tool_use_id: &str, tool_name: Option<&str>, now: f64) -> u32 {
        let Some(sid) = self.sid(id) else {
            return 0;
        };
        let at = self.at(now);
        // The heartbeats it had until now count first (the tool was in flight until `now`).
        self.refresh_one(id, at);
        if let Some(x) = self.extra.get_mut(&id) {
            x.in_flight.retain(|t| &**t != tool_use_id);
        }
        self.registry.tool_boundary(at, sid, tool_name);
        self.flags()
    }

    /// A permission request began (a wrapped `can_use_tool` was called): a human wait, the
    /// idle and no-progress clocks stand still until it ends. Returns the request id.
    fn permission_begin(&mut self, id: u64, now: f64) -> PyResult<(String, u32)> {
        self.next_request += 1;
        let rid = format!("py-{}", self.next_request);
        self.buf.set(
            format!(
                r#"{{"type":"control_request","request_id":"{rid}","request":{{"subtype":"can_use_tool"}}}}"#
            )
            .as_bytes(),
        );
        let f = self.feed(id, Some(now), true)?;
        Ok((rid, f))
    }

    /// The permission request `rid` was answered.
    fn permission_end(&mut self, id: u64, rid: &str, now: f64) -> u32 {
        let Some(sid) = self.sid(id) else {
            return 0;
        };
        let at = self.at(now);
        let line = format!(r#"{{"type":"control_response","response":{{"request_id":"{rid}"}}}}"#);
        if let Ok(view) = watchdog_core::LineView::parse(line.as_bytes()) {
            self.registry.observe_input(at, sid, &view);
        }
        self.flags()
    }

    /// The stream ended: returns the outcome's name.
    fn end(&mut self, id: u64, now: f64) -> (Option<String>, u32) {
        let Some(sid) = self.sid(id) else {
            return (None, 0);
        };
        let at = self.at(now);
        let outcome = self.registry.end(at, sid).map(|o| o.as_str().to_owned());
        if let Some(x) = self.extra.get_mut(&id) {
            x.in_flight.clear();
        }
        (outcome, self.flags())
    }

    /// Forget the session; returns its kill, if any.
    fn unregister<'py>(
        &mut self,
        py: Python<'py>,
        id: u64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let Some(x) = self.extra.remove(&id) else {
            return Ok(None);
        };
        match self.registry.unregister(x.sid) {
            Some(k) => Ok(Some(self.kill_tuple(py, &k)?)),
            None => Ok(None),
        }
    }

    /// Forget every session.
    fn clear(&mut self) {
        self.registry.clear();
        self.extra.clear();
        self.pending.clear();
    }

    /// The kill of a session, if killed.
    fn kill<'py>(&self, py: Python<'py>, id: u64) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let Some(sid) = self.sid(id) else {
            return Ok(None);
        };
        match self.registry.kill(sid) {
            Some(k) => Ok(Some(self.kill_tuple(py, k)?)),
            None => Ok(None),
        }
    }

    /// The next deadline of any session, in clock seconds (None: nothing is due ever).
    fn poll_timeout(&self) -> Option<f64> {
        self.registry.poll_timeout().map(|t| self.secs(t))
    }

    /// The timer sleeps until `at` (None: it does not sleep on a deadline).
    fn set_armed(&mut self, at: Option<f64>) {
        self.armed = at;
    }

    /// Process everything due at `now`. A session with a tool in flight first counts as
    /// having had the CLI's heartbeat at `now` (the idle rule does not apply to it).
    fn handle_timeout(&mut self, now: f64) -> u32 {
        let at = self.at(now);
        let ids: Vec<u64> = self
            .extra
            .iter()
            .filter(|(_, x)| !x.in_flight.is_empty())
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.refresh_one(id, at);
        }
        self.registry.handle_timeout(at);
        self.flags()
    }

    /// The rate-limit utilization (highest active window), or None.
    fn set_utilization(&mut self, utilization: Option<f64>, now: f64) -> u32 {
        let at = self.at(now);
        if self.registry.utilization() != utilization {
            self.registry.set_utilization(at, utilization);
        }
        self.flags()
    }

    /// Drain the events: tuples `(name, id, …)`.
    fn events<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for e in std::mem::take(&mut self.pending) {
            let id = e.id().as_u64();
            let item = match &e {
                Event::Killed(k) => {
                    ("killed", id, self.kill_tuple(py, k)?.into_any()).into_pyobject(py)?
                }
                Event::Extended { reason, .. } => (
                    "extended",
                    id,
                    reason.as_str().into_pyobject(py)?.into_any(),
                )
                    .into_pyobject(py)?,
                Event::Stalling {
                    clock, remaining, ..
                } => (
                    "stalling",
                    id,
                    (
                        match clock {
                            watchdog_core::StallClock::Idle => "idle",
                            watchdog_core::StallClock::NoProgress => "no_progress",
                        },
                        remaining.as_secs_f64(),
                    )
                        .into_pyobject(py)?
                        .into_any(),
                )
                    .into_pyobject(py)?,
                Event::Settled { .. } => {
                    ("settled", id, py.None().into_bound(py)).into_pyobject(py)?
                }
                Event::Ended { outcome, .. } => {
                    ("ended", id, outcome.as_str().into_pyobject(py)?.into_any())
                        .into_pyobject(py)?
                }
                _ => continue,
            };
            out.append(item)?;
        }
        Ok(out)
    }

    /// Lines observed per kind (all sessions), by the core's kind names.
    fn line_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (kind, n) in watchdog_core::LineKind::ALL
            .iter()
            .zip(self.registry.line_counts())
        {
            if *n > 0 {
                out.set_item(kind.as_str(), *n)?;
            }
        }
        Ok(out)
    }

    /// The registered sessions.
    fn __len__(&self) -> usize {
        self.registry.len()
    }

    /// The resolved options (seconds for durations).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = self.registry.limits();
        let out = PyDict::new(py);
        out.set_item("idle", d.idle().as_secs_f64())?;
        out.set_item("no_progress", d.no_progress().as_secs_f64())?;
        out.set_item("startup", d.startup().as_secs_f64())?;
        out.set_item("linger", d.linger().as_secs_f64())?;
        out.set_item("ceiling", d.ceiling().map(|c| c.as_secs_f64()))?;
        out.set_item("extend_factor", d.extend_factor())?;
        out.set_item("high_utilization", d.high_utilization())?;
        out.set_item("warn_at", d.warn_at())?;
        let tools: Vec<&str> = d.write_tools().iter().map(|t| &**t).collect();
        out.set_item("write_tools", PyTuple::new(py, tools)?)?;
        Ok(out)
    }
}

#[pymethods]
impl Core {
    #[new]
    #[pyo3(signature = (*, epoch, idle, no_progress, startup, linger, ceiling, extend_factor,
        high_utilization, warn_at, write_tools))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        epoch: f64,
        idle: f64,
        no_progress: f64,
        startup: f64,
        linger: f64,
        ceiling: Option<f64>,
        extend_factor: f64,
        high_utilization: f64,
        warn_at: f64,
        write_tools: Vec<String>,
    ) -> PyResult<Self> {
        Ok(Core {
            inner: Mutex::new(Inner::new(
                epoch,
                idle,
                no_progress,
                startup,
                linger,
                ceiling,
                extend_factor,
                high_utilization,
                warn_at,
                write_tools,
            )?),
        })
    }
    /// Register a session; `ceiling` overrides the watchdog's (None: the watchdog's).
    #[pyo3(signature = (now, ceiling=None))]
    fn register(&self, py: Python<'_>, now: f64, ceiling: Option<f64>) -> PyResult<(u64, u32)> {
        self.lock(py).register(now, ceiling)
    }

    /// Feed one message `query()` yielded (any SDK message object, a raw stream-json `dict`,
    /// or a raw line as `bytes`/`str`).
    #[pyo3(signature = (id, message, now=None))]
    fn observe(
        &self,
        py: Python<'_>,
        id: u64,
        message: &Bound<'_, PyAny>,
        now: Option<f64>,
    ) -> PyResult<u32> {
        self.lock(py).observe(id, message, now)
    }

    /// A tool boundary by hand (`activity(tool_name)`): progress; a write tool's completes
    /// the first write.
    #[pyo3(signature = (id, tool_name, now))]
    fn activity(&self, py: Python<'_>, id: u64, tool_name: Option<&str>, now: f64) -> u32 {
        self.lock(py).activity(id, tool_name, now)
    }

    /// A stream frame by hand: progress.
    fn stream(&self, py: Python<'_>, id: u64, now: f64) -> PyResult<u32> {
        self.lock(py).stream(id, now)
    }

    /// A keep-alive by hand (a sign of life, not progress; a settled session stays settled).
    fn heartbeat(&self, py: Python<'_>, id: u64, now: f64) -> PyResult<u32> {
        self.lock(py).heartbeat(id, now)
    }

    /// Settle by hand, as a result would.
    fn settle(&self, py: Python<'_>, id: u64, now: f64) -> u32 {
        self.lock(py).settle(id, now)
    }

    /// A tool started (`PreToolUse`): progress, and until its end the session counts as
    /// receiving the CLI's tool heartbeats (the idle rule is held off; the no-progress cap and
    /// the ceiling run).
    fn tool_start(&self, py: Python<'_>, id: u64, tool_use_id: &str, now: f64) -> u32 {
        self.lock(py).tool_start(id, tool_use_id, now)
    }

    /// A tool ended (`PostToolUse` with its name, `PostToolUseFailure` with none).
    #[pyo3(signature = (id, tool_use_id, tool_name, now))]
    fn tool_end(
        &self,
        py: Python<'_>,
        id: u64,
        tool_use_id: &str,
        tool_name: Option<&str>,
        now: f64,
    ) -> u32 {
        self.lock(py).tool_end(id, tool_use_id, tool_name, now)
    }

    /// A permission request began (a wrapped `can_use_tool` was called): a human wait, the
    /// idle and no-progress clocks stand still until it ends. Returns the request id.
    fn permission_begin(&self, py: Python<'_>, id: u64, now: f64) -> PyResult<(String, u32)> {
        self.lock(py).permission_begin(id, now)
    }

    /// The permission request `rid` was answered.
    fn permission_end(&self, py: Python<'_>, id: u64, rid: &str, now: f64) -> u32 {
        self.lock(py).permission_end(id, rid, now)
    }

    /// The stream ended: returns the outcome's name.
    fn end(&self, py: Python<'_>, id: u64, now: f64) -> (Option<String>, u32) {
        self.lock(py).end(id, now)
    }

    /// Forget the session; returns its kill, if any.
    fn unregister<'py>(&self, py: Python<'py>, id: u64) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.lock(py).unregister(py, id)
    }

    /// Forget every session.
    fn clear(&self, py: Python<'_>) {
        self.lock(py).clear()
    }

    /// The kill of a session, if killed.
    fn kill<'py>(&self, py: Python<'py>, id: u64) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.lock(py).kill(py, id)
    }

    /// The next deadline of any session, in clock seconds (None: nothing is due ever).
    fn poll_timeout(&self, py: Python<'_>) -> Option<f64> {
        self.lock(py).poll_timeout()
    }

    /// The timer sleeps until `at` (None: it does not sleep on a deadline).
    #[pyo3(signature = (at))]
    fn set_armed(&self, py: Python<'_>, at: Option<f64>) {
        self.lock(py).set_armed(at)
    }

    /// Process everything due at `now`. A session with a tool in flight first counts as
    /// having had the CLI's heartbeat at `now` (the idle rule does not apply to it).
    fn handle_timeout(&self, py: Python<'_>, now: f64) -> u32 {
        self.lock(py).handle_timeout(now)
    }

    /// The rate-limit utilization (highest active window), or None.
    #[pyo3(signature = (utilization, now))]
    fn set_utilization(&self, py: Python<'_>, utilization: Option<f64>, now: f64) -> u32 {
        self.lock(py).set_utilization(utilization, now)
    }

    /// Drain the events: tuples `(name, id, …)`.
    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.lock(py).events(py)
    }

    /// Lines observed per kind (all sessions), by the core's kind names.
    fn line_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.lock(py).line_counts(py)
    }

    /// The registered sessions.
    fn __len__(&self, py: Python<'_>) -> usize {
        self.lock(py).__len__()
    }

    /// The resolved options (seconds for durations).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.lock(py).config(py)
    }
}

impl Inner {
    fn sid(&self, id: u64) -> Option<SessionId> {
        self.extra.get(&id).map(|x| x.sid)
    }

    /// A session with a tool in flight had the CLI's heartbeat at `at` (counted before what
    /// is due at `at`, which then fires only if it still holds).
    fn refresh_one(&mut self, id: u64, at: Instant) {
        let Some(x) = self.extra.get(&id).filter(|x| !x.in_flight.is_empty()) else {
            return;
        };
        let sid = x.sid;
        if let Ok(view) = watchdog_core::LineView::parse(br#"{"type":"tool_progress"}"#) {
            self.registry.observe_waited(at, sid, Some(&view));
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn limits(
    base: Limits,
    idle: f64,
    no_progress: f64,
    startup: f64,
    linger: f64,
    ceiling: Option<f64>,
    extend_factor: f64,
    high_utilization: f64,
    warn_at: f64,
) -> PyResult<Limits> {
    let l = base
        .with_idle(seconds("idle", idle)?)
        .map_err(value_error)?
        .with_no_progress(seconds("no_progress", no_progress)?)
        .map_err(value_error)?
        .with_startup(seconds("startup", startup)?)
        .map_err(value_error)?
        .with_linger(seconds("linger", linger)?)
        .map_err(value_error)?;
    let ceiling = match ceiling {
        Some(c) => Some(seconds("ceiling", c)?),
        None => None,
    };
    l.with_ceiling(ceiling)
        .map_err(value_error)?
        .with_extend_factor(extend_factor)
        .map_err(value_error)?
        .with_high_utilization(high_utilization)
        .map_err(value_error)?
        .with_warn_at(warn_at)
        .map_err(value_error)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Core>()?;
    m.add_class::<WarningDedup>()?;
    m.add_function(wrap_pyfunction!(parse_duration_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(watchdog_defaults, m)?)?;
    rate_limit::register(m)?;
    Ok(())
}

/// The core's once-per-code warning de-dup ([`watchdog_core::WarningFilter`]): the Python
/// warning filter keys it by the warning's category.
#[pyclass(module = "agent_sdk_watchdog._native")]
struct WarningDedup {
    /// The filter holds an optional `Send` callback (unused here), so it is not `Sync`: a
    /// mutex makes the class shareable (it is only ever touched with the GIL held).
    inner: std::sync::Mutex<watchdog_core::WarningFilter>,
}

#[pymethods]
impl WarningDedup {
    #[new]
    fn new(codes: Vec<String>) -> Self {
        WarningDedup {
            inner: std::sync::Mutex::new(watchdog_core::WarningFilter::with_codes(codes)),
        }
    }

    /// `"pass"` (not listed), `"first"` (show it) or `"suppressed"`.
    fn check(&self, code: &str) -> &'static str {
        let mut f = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match f.check(code) {
            watchdog_core::WarningDecision::Pass => "pass",
            watchdog_core::WarningDecision::First => "first",
            _ => "suppressed",
        }
    }

    /// How many of `code` were swallowed after the first.
    fn suppressed(&self, code: &str) -> u64 {
        let f = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f.suppressed(code)
    }
}

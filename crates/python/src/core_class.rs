//! The `Core` Python class: one watchdog behind a mutex, each method one locked call into
//! its [`Inner`] state.

use std::sync::{Mutex, MutexGuard, TryLockError};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use watchdog_core::Limits;
use watchdog_host::metrics::scrape::Request;

use crate::options::{seconds, value_error};
use crate::watchdog_state::Inner;

/// One watchdog: its state behind a mutex, so the timer thread and the host's threads can
/// call it at any time (a call that finds it busy waits without the GIL).
#[pyclass(module = "agent_sdk_watchdog._native", frozen)]
pub(crate) struct Core {
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
        let limits = Limits::default()
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
        let limits = limits
            .with_ceiling(ceiling)
            .map_err(value_error)?
            .with_extend_factor(extend_factor)
            .map_err(value_error)?
            .with_high_utilization(high_utilization)
            .map_err(value_error)?
            .with_warn_at(warn_at)
            .map_err(value_error)?
            .with_write_tools(write_tools);
        Ok(Core {
            inner: Mutex::new(Inner::new(epoch, limits)),
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

    /// What this watchdog counted since it was made, and its gauges now, as the core's JSON
    /// snapshot (`Metrics::to_json`).
    fn metrics_json(&self, py: Python<'_>) -> String {
        let metrics = self.lock(py).metrics();
        metrics.to_json().to_string()
    }

    /// The same snapshot in the Prometheus text exposition format 0.0.4.
    fn render_prometheus(&self, py: Python<'_>) -> String {
        let metrics = self.lock(py).metrics();
        metrics.render_prometheus()
    }

    /// The whole answer to a scrape whose request head is `head` (`None`: the head did not
    /// end within the server's bound, 431), the core's for every host.
    #[pyo3(signature = (head))]
    fn scrape_response<'py>(&self, py: Python<'py>, head: Option<&[u8]>) -> Bound<'py, PyBytes> {
        let request = head.map_or(Request::HeadTooLarge, Request::classify);
        let answer = request.response(|| self.render_prometheus(py));
        PyBytes::new(py, &answer)
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

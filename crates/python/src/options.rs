//! The watchdog's options between Python and the core: seconds to durations checked by the
//! core's rule, a config error as a `ValueError`, and the limits shown back as a Python `dict`.

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use watchdog_core::config::HumanDuration;
use watchdog_core::{ConfigError, Limits};

/// A config error as Python's `ValueError`, in the core's words.
pub(crate) fn value_error(e: ConfigError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A duration option in seconds: finite and >= 0 here, then the core's rule (`> 0`, at most
/// 365 days) decides, in the core's words.
pub(crate) fn seconds(option: &'static str, value: f64) -> PyResult<Duration> {
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
pub(crate) fn parse_duration_seconds(option: &str, text: &str) -> PyResult<f64> {
    text.parse::<HumanDuration>()
        .map(HumanDuration::get)
        .map(|d| d.as_secs_f64())
        .map_err(|e| PyValueError::new_err(format!("{option} {e}")))
}

/// The core's defaults, as Python values (seconds for durations).
#[pyfunction]
pub(crate) fn watchdog_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    limits_dict(py, &Limits::default())
}

/// `limits` as Python values (seconds for durations): the defaults, and a watchdog's resolved
/// options.
pub(crate) fn limits_dict<'py>(py: Python<'py>, d: &Limits) -> PyResult<Bound<'py, PyDict>> {
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

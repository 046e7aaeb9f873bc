//! The rate-limit monitor and the reading's one-line formatter, for Python.

use std::time::{SystemTime, UNIX_EPOCH};

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use watchdog_core::rate_limit::{Reading, Status};
use watchdog_core::{format_iso_ms, WallMs};
use watchdog_core::{
    rate_limit::RateLimitConfig, rate_limit::RateLimitEvent, rate_limit::RateLimitMonitor,
};

use crate::messages::to_value;

fn wall_ms(now: Option<f64>) -> WallMs {
    match now {
        Some(s) if s.is_finite() && s > 0.0 => (s * 1000.0) as WallMs,
        Some(_) => 0,
        None => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as WallMs),
    }
}

/// A reading as a Python dict (snake_case keys; times in epoch seconds).
fn reading_dict<'py>(py: Python<'py>, r: &Reading) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("status", r.status.as_ref().map(|s| s.as_str()))?;
    d.set_item("utilization", r.utilization)?;
    d.set_item("resets_at", r.resets_at_ms.map(|ms| ms as f64 / 1000.0))?;
    d.set_item("rate_limit_type", r.rate_limit_type.as_deref())?;
    d.set_item("overage_status", r.overage_status.as_deref())?;
    d.set_item(
        "overage_disabled_reason",
        r.overage_disabled_reason.as_deref(),
    )?;
    d.set_item(
        "overage_resets_at",
        r.overage_resets_at_ms.map(|ms| ms as f64 / 1000.0),
    )?;
    d.set_item("is_using_overage", r.is_using_overage)?;
    d.set_item("error_code", r.error_code.as_deref())?;
    Ok(d)
}

/// A reading from a dict made by [`reading_dict`] (or by hand: the same keys, all optional).
fn reading_of(d: &Bound<'_, PyDict>) -> PyResult<Reading> {
    let s = |k: &str| -> PyResult<Option<String>> {
        Ok(match d.get_item(k)? {
            Some(v) if !v.is_none() => Some(v.extract()?),
            _ => None,
        })
    };
    let f = |k: &str| -> PyResult<Option<f64>> {
        Ok(match d.get_item(k)? {
            Some(v) if !v.is_none() => Some(v.extract()?),
            _ => None,
        })
    };
    let ms = |k: &str| -> PyResult<Option<WallMs>> {
        match f(k)? {
            None => Ok(None),
            Some(x) if x.is_finite() && x >= 0.0 && x * 1000.0 <= 8.64e15 => {
                Ok(Some((x * 1000.0).round() as WallMs))
            }
            Some(x) => Err(PyValueError::new_err(format!(
                "{k} must be epoch seconds between 0 and 8.64e12, got {x}"
            ))),
        }
    };
    Ok(Reading {
        status: s("status")?.map(|x| Status::parse(&x)),
        utilization: f("utilization")?,
        resets_at_ms: ms("resets_at")?,
        rate_limit_type: s("rate_limit_type")?,
        overage_status: s("overage_status")?,
        overage_disabled_reason: s("overage_disabled_reason")?,
        overage_resets_at_ms: ms("overage_resets_at")?,
        is_using_overage: match d.get_item("is_using_overage")? {
            Some(v) if !v.is_none() => Some(v.is_truthy()?),
            _ => None,
        },
        error_code: s("error_code")?,
        observed_at_ms: 0,
    })
}

/// One line for a reading: `allowed_warning at 99%, overage rejected (out_of_credits), resets
/// at 2030-03-17T18:46:40.000Z`.
#[pyfunction]
fn format_rate_limit_reading(reading: &Bound<'_, PyDict>) -> PyResult<String> {
    Ok(reading_of(reading)?.to_string())
}

/// The reading's reset time as ISO-8601 UTC with milliseconds, or None.
#[pyfunction]
fn rate_limit_reset_iso(reading: &Bound<'_, PyDict>) -> PyResult<Option<String>> {
    Ok(reading_of(reading)?.resets_at_ms.map(format_iso_ms))
}

/// The merged rate-limit reading of many `rate_limit_event` messages.
#[pyclass(module = "agent_sdk_watchdog._native")]
struct Monitor {
    inner: RateLimitMonitor,
}

impl Monitor {
    fn fold<'py>(
        &mut self,
        py: Python<'py>,
        now: Option<f64>,
        info: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let v = to_value(info, 0);
        let events = self.inner.note(wall_ms(now), &v);
        let warned = events
            .iter()
            .any(|e| matches!(e, RateLimitEvent::Warning { .. }));
        match (warned, self.inner.latest()) {
            (true, Some(r)) => Ok(Some(reading_dict(py, r)?)),
            _ => Ok(None),
        }
    }
}

#[pymethods]
impl Monitor {
    #[new]
    #[pyo3(signature = (*, warn_at, fallback_window))]
    fn new(warn_at: f64, fallback_window: String) -> PyResult<Self> {
        let config = RateLimitConfig::default()
            .with_warn_at(warn_at)
            .and_then(|c| c.with_fallback_window(fallback_window))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Monitor {
            inner: RateLimitMonitor::new(config),
        })
    }

    /// Fold a message: a `RateLimitEvent` (its raw `rate_limit_info`) or a raw stream-json
    /// dict of type `rate_limit_event`; any other message changes nothing. Returns the merged
    /// reading the first time a window reaches `warn_at`, else None.
    #[pyo3(signature = (message, now=None))]
    fn observe<'py>(
        &mut self,
        py: Python<'py>,
        message: &Bound<'py, PyAny>,
        now: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        if let Ok(d) = message.cast::<PyDict>() {
            let is_rl = d.get_item("type")?.is_some_and(|t| {
                t.cast::<PyString>()
                    .is_ok_and(|s| s.to_cow().is_ok_and(|s| s == "rate_limit_event"))
            });
            if !is_rl {
                return Ok(None);
            }
            return match d.get_item("rate_limit_info")? {
                Some(info) => self.fold(py, now, &info),
                None => Ok(None),
            };
        }
        let Ok(info) = message.getattr(intern!(py, "rate_limit_info")) else {
            return Ok(None);
        };
        match info.getattr(intern!(py, "raw")) {
            Ok(raw) if raw.cast::<PyDict>().is_ok_and(|d| !d.is_empty()) => {
                self.fold(py, now, &raw)
            }
            _ => {
                // A RateLimitInfo built by hand: its declared fields, in the wire's names.
                let d = PyDict::new(py);
                for (attr, key) in [
                    ("status", "status"),
                    ("resets_at", "resetsAt"),
                    ("rate_limit_type", "rateLimitType"),
                    ("utilization", "utilization"),
                    ("overage_status", "overageStatus"),
                    ("overage_resets_at", "overageResetsAt"),
                    ("overage_disabled_reason", "overageDisabledReason"),
                ] {
                    if let Ok(v) = info.getattr(attr) {
                        if !v.is_none() {
                            d.set_item(key, v)?;
                        }
                    }
                }
                self.fold(py, now, d.as_any())
            }
        }
    }

    /// Fold a bare `rate_limit_info` dict (wire names: `status`, `utilization`, `resetsAt`,
    /// `rateLimitType`, `unifiedWindows`, `overageStatus`, …).
    #[pyo3(signature = (info, now=None))]
    fn note<'py>(
        &mut self,
        py: Python<'py>,
        info: &Bound<'py, PyAny>,
        now: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.fold(py, now, info)
    }

    /// The reading, or None once its reset time has passed.
    #[pyo3(signature = (now=None))]
    fn active<'py>(
        &self,
        py: Python<'py>,
        now: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        match self.inner.active(wall_ms(now)) {
            Some(r) => Ok(Some(reading_dict(py, r)?)),
            None => Ok(None),
        }
    }

    /// The reading, stale or not.
    fn latest<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        match self.inner.latest() {
            Some(r) => Ok(Some(reading_dict(py, r)?)),
            None => Ok(None),
        }
    }

    /// The highest active window's utilization, for the watchdog's high-utilization rule.
    #[pyo3(signature = (now=None))]
    fn utilization(&self, now: Option<f64>) -> Option<f64> {
        self.inner.utilization(wall_ms(now))
    }

    /// Forget the reading and arm the warning again.
    fn reset(&mut self) {
        self.inner.reset();
    }

    /// The resolved options.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.inner.config();
        let d = PyDict::new(py);
        d.set_item("warn_at", c.warn_at())?;
        d.set_item("fallback_window", c.fallback_window())?;
        Ok(d)
    }
}

/// Rate-limit defaults.
#[pyfunction]
fn rate_limit_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let c = RateLimitConfig::default();
    let d = PyDict::new(py);
    d.set_item("warn_at", c.warn_at())?;
    d.set_item("fallback_window", c.fallback_window())?;
    Ok(d)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Monitor>()?;
    m.add_function(wrap_pyfunction!(format_rate_limit_reading, m)?)?;
    m.add_function(wrap_pyfunction!(rate_limit_reset_iso, m)?)?;
    m.add_function(wrap_pyfunction!(rate_limit_defaults, m)?)?;
    Ok(())
}

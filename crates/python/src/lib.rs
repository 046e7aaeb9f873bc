//! `agent_sdk_watchdog._native`: the in-process Python API's engine, on `watchdog-core`.
//!
//! The Python layer (`agent_sdk_watchdog/inprocess.py`) owns the clock, the timer and the
//! callbacks; this module owns the policy: one [`Registry`](watchdog_core::Registry) per watchdog, fed with what the
//! Python Agent SDK's `query()` yields (its message objects, read here without converting them
//! in Python), plus the rate-limit monitor, the reading formatter and the warning de-dup's
//! once-per-category memory, and the fleet metrics (`watchdog_host::metrics`: counted as the
//! events are handed to Python, rendered for Prometheus, the answer to a scrape).
//!
//! What follows from the rules (the policy's variables, the synthetic result's reader, the
//! activity timeouts, the SDK-run fold, the failure table) is the `rules` module's, for the helpers.
//!
//! Time: every call takes `now` as seconds on the caller's clock (a float); the registry sees
//! `base + (now - epoch)`, so a virtual clock works as well as `time.monotonic()`.
//!
//! `unsafe`: this crate writes none, but the `#[pymodule]` / `#[pyclass]` / `#[pymethods]`
//! macros expand to `unsafe` FFI glue, so `#![forbid(unsafe_code)]` cannot be set here;
//! `#![deny(unsafe_code)]` is not usable either (the lint fires inside the expansions).

mod core_class;
mod messages;
mod options;
mod rate_limit;
mod rules;
mod to_python;
mod warning_dedup;
mod watchdog_state;

use pyo3::prelude::*;

use core_class::Core;
use options::{parse_duration_seconds, watchdog_defaults};
use warning_dedup::WarningDedup;

/// Where a scrape's request head ends in `data` (just after its blank line), or None.
#[pyfunction]
fn head_end(data: &[u8]) -> Option<usize> {
    watchdog_host::metrics::scrape::head_end(data)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Core>()?;
    m.add_class::<WarningDedup>()?;
    m.add_function(wrap_pyfunction!(parse_duration_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(watchdog_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(head_end, m)?)?;
    rate_limit::register(m)?;
    rules::register(m)?;
    Ok(())
}

//! The `WarningDedup` Python class: the core's once-per-code warning filter, for the Python
//! warning filter.

use std::sync::Mutex;

use pyo3::prelude::*;

/// The core's once-per-code warning de-dup ([`watchdog_host::warning_filter::WarningFilter`]): the Python
/// warning filter keys it by the warning's category.
#[pyclass(module = "agent_sdk_watchdog._native")]
pub(crate) struct WarningDedup {
    /// The filter holds an optional `Send` callback (unused here), so it is not `Sync`: a
    /// mutex makes the class shareable (it is only ever touched with the GIL held).
    inner: Mutex<watchdog_host::warning_filter::WarningFilter>,
}

#[pymethods]
impl WarningDedup {
    #[new]
    fn new(codes: Vec<String>) -> Self {
        WarningDedup {
            inner: Mutex::new(watchdog_host::warning_filter::WarningFilter::with_codes(
                codes,
            )),
        }
    }

    /// `"pass"` (not listed), `"first"` (show it) or `"suppressed"`.
    fn check(&self, code: &str) -> &'static str {
        let mut f = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match f.check(code) {
            watchdog_host::warning_filter::WarningDecision::Pass => "pass",
            watchdog_host::warning_filter::WarningDecision::First => "first",
            _ => "suppressed",
        }
    }

    /// How many of `code` were swallowed after the first.
    fn suppressed(&self, code: &str) -> u64 {
        let f = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f.suppressed(code)
    }
}

//! What a [`Watchdog`](crate::Watchdog) counts as it delivers events, and the snapshot of it
//! ([`Metrics`]) with its Prometheus text rendering: watchdog-host's
//! [`watchdog_host::metrics`], the same counting and rendering the Node and Python
//! in-process APIs use.
//!
//! Counting is a relaxed atomic add per event (a clock read for a kill): no lock taken, no
//! allocation. Only the snapshot and the rendering allocate.

pub(crate) use watchdog_host::metrics::Counters;
pub use watchdog_host::metrics::{LatenessHistogram, Metrics};

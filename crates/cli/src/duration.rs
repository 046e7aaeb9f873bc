//! Human durations for flags: `10m`, `90s`, `1h30m`, `250ms`, `1.5h`; the grammar and its
//! 365-day cap are the core's ([`watchdog_core::config::parse_duration`]).

pub use watchdog_core::config::{format_duration, parse_duration, MAX_DURATION};

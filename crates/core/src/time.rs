//! The instant every call of the core takes.
//!
//! On every target with an OS clock this is [`std::time::Instant`] itself, so hosts pass the
//! instants they read and nothing changes for them. On bare WebAssembly
//! (`wasm32-unknown-unknown`, the one core of the in-process Node API) std's `Instant` cannot
//! be made at all (`Instant::now` panics and there is no other constructor), so there it is
//! [`bare::Instant`]: a point on the host's own clock, made from the host's number with
//! [`bare::Instant::from_origin`], with the same arithmetic. The core never reads a clock
//! itself either way: time is a parameter.

pub mod bare;

#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
pub use std::time::Instant;

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub use bare::Instant;

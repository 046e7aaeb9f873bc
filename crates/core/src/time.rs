//! The instant every call of the core takes ([`Instant`]).

// Compiled and tested on every target; the core's instant only on bare WebAssembly.
#[cfg_attr(
    not(all(target_family = "wasm", target_os = "unknown")),
    allow(dead_code)
)]
mod bare;

#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
pub use std::time::Instant;

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub use bare::Instant;

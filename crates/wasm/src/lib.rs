//! The one core of the npm package `agent-sdk-watchdog`'s in-process API, as WebAssembly.
//!
//! `createWatchdog()` is the core's [`Registry`](watchdog_core::Registry) under the reference
//! preset ([`reference`](mod@reference)), `createRateLimitMonitor()` the core's rate-limit
//! monitor, `metrics()` the core's counters: one module, `watchdog.wasm`, built for
//! `wasm32-unknown-unknown` with plain exports and no imports, so Node loads it synchronously
//! at import on every OS and CPU it runs on (`lib/core.mjs`). No second policy engine: the
//! JavaScript side only looks a message's `type` up in the core's table and hands the row's
//! number over.
//!
//! The exports ([`abi`]) pass numbers; text crosses through two byte buffers in the module's
//! memory (the host writes [`abi::input`], reads what a call wrote at [`abi::output_ptr`]),
//! and what a tick found through an array of numbers ([`abi::records_ptr`],
//! [`abi::RECORD`] numbers a record). Objects live in the module and are named by small
//! indices; a call with an index that names nothing does nothing.
//!
//! `unsafe`: none is written here. Exporting a function by its name (`#[no_mangle]`) counts as
//! unsafe code to the compiler, so [`abi`] allows it and nothing else does.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod abi;
pub mod clock;
pub mod evaluate;
pub mod rate_limit;
pub mod reference;
mod state;
pub mod watchdog;

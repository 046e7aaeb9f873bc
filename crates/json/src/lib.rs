//! # watchdog-json
//!
//! Allocation-free JSON scanning for agent-sdk-watchdog: one byte kernel, two walkers. Its
//! users are the watchdog's own crates: the core's line view (`watchdog-core`) and the
//! transcript reader of the audit (`watchdog-audit`). Users of the watchdog read lines through
//! the core's `LineView`.
//!
//! - `kernel` (private): find the next quote / backslash / control byte eight bytes at a time
//!   (SWAR), and jump over a string's body from quote to quote.
//! - [`validate`]: the strict walker. A line view checks its line once with it (RFC 8259
//!   grammar, bounded nesting) and gets the top-level members in the same pass.
//! - [`skim`]: the lenient walker. It checks structure only and skips what it is not asked
//!   about; the line view's later lookups into validated text use it, and so does the audit
//!   on transcript lines too large to validate in full.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod kernel;
pub mod skim;
pub mod validate;

//! Allocation-free JSON scanning: one byte kernel, two walkers.
//!
//! - `kernel` (private): find the next quote / backslash / control byte eight bytes at a time
//!   (SWAR), and jump over a string's body from quote to quote.
//! - `validate` (crate-private): the strict walker. A line view checks its line once with it
//!   (RFC 8259 grammar, bounded nesting) and gets the top-level members in the same pass.
//! - [`skim`]: the lenient walker. It checks structure only and skips what it is not asked
//!   about; the line view's later lookups into validated text use it, and so does the audit
//!   on transcript lines too large to validate in full.

mod kernel;
pub mod skim;
mod validate;

pub(crate) use skim::{find_member, for_each_element, for_each_member};
pub(crate) use validate::{members, members_nested, Member};

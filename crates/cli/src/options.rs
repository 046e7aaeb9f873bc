//! The one table of user-facing options: the host crate's ([`watchdog_host::options`]), the
//! same for the command line, the drop-in and the SDK helpers (through the bindings).

pub use watchdog_host::options::*;

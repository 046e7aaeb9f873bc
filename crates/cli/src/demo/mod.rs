//! `agent-watchdog demo`: the watchdog at work on a real `claude`, offline, in under a minute
//! (the acts are in `acts.rs`, built with the cargo feature `demo`, which carries the mock of
//! the Messages API). A build without it still knows the command and says what is missing.

#[cfg(feature = "demo")]
mod acts;
mod args;

#[cfg(feature = "demo")]
pub use acts::main;
pub use args::DemoArgs;

/// Run `demo` in a build without it: one line on stderr, exit 2.
#[cfg(not(feature = "demo"))]
pub fn main(_args: DemoArgs) -> i32 {
    eprintln!(
        "agent-watchdog: this build has no demo (it was built without the cargo feature \
         `demo`, which carries the mock API server)"
    );
    crate::exit_code::USAGE
}

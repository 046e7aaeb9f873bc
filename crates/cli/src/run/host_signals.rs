//! The signals the watchdog itself receives.
//!
//! SIGHUP (the terminal was closed), SIGINT (Ctrl-C), SIGQUIT (Ctrl-\) and SIGTERM are
//! forwarded to the child's process group; the run then escalates to SIGKILL of the whole tree
//! after `--grace` if the child is still there, and a second one escalates at once. SIGUSR1,
//! SIGUSR2 and SIGALRM, whose default action would end the watchdog silently and orphan the
//! child's tree, are caught and ignored. (SIGPIPE is ignored by the Rust runtime: a closed
//! reader shows up as a write error. SIGKILL cannot be caught: on Linux the child gets SIGTERM
//! through its parent-death signal.)
//!
//! Windows has no signals: Ctrl-C and Ctrl-Break count as SIGINT, the console's close and the
//! user's logoff as SIGHUP, a shutdown as SIGTERM, each forwarded as the graceful rung (the
//! child's stdin closed, `CTRL_BREAK` to its group) and escalated the same way; a run they
//! ended exits with the same codes (130, 129, 143). A killed watchdog's tree ends with its
//! job.
/// A signal the user (or the system) sent us, which we forward to the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UserSig {
    /// SIGHUP: the terminal went away.
    Hup,
    /// SIGINT: Ctrl-C.
    Int,
    /// SIGQUIT: Ctrl-\.
    Quit,
    /// SIGTERM.
    Term,
}

impl UserSig {
    /// The same signal, as the supervisor forwards it to the child's process group.
    pub(crate) fn signal(self) -> agent_sdk_watchdog::Signal {
        use agent_sdk_watchdog::Signal;
        match self {
            UserSig::Hup => Signal::Hup,
            UserSig::Int => Signal::Int,
            UserSig::Quit => Signal::Quit,
            UserSig::Term => Signal::Term,
        }
    }

    /// The signal's name, e.g. `SIGTERM`.
    pub(crate) fn name(self) -> &'static str {
        self.signal().name()
    }

    /// The exit code of a run that this signal ended: `128 + N`, as a shell reports it.
    pub(crate) fn exit_code(self) -> i32 {
        128 + self.signal().number()
    }
}

/// The host's signals, for every run of one invocation and the waits between (the
/// platform's receivers: [`crate::os::UserSignals`]).
pub(crate) struct UserSignals(crate::os::UserSignals);

impl UserSignals {
    /// Install the handlers (from now on these signals no longer end the process by default).
    pub(crate) fn new() -> Self {
        UserSignals(crate::os::UserSignals::new())
    }

    /// The next forwarded signal (pending forever when none can be received). Ignored signals
    /// are drained on the way.
    pub(crate) async fn recv(&mut self) -> UserSig {
        use agent_sdk_watchdog::Signal;
        loop {
            match std::future::poll_fn(|cx| self.0.poll_recv(cx)).await {
                Signal::Hup => return UserSig::Hup,
                Signal::Int => return UserSig::Int,
                Signal::Quit => return UserSig::Quit,
                Signal::Term => return UserSig::Term,
                // Never reported by the platform; nothing to forward.
                _ => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal() {
        assert_eq!(UserSig::Hup.exit_code(), 129);
        assert_eq!(UserSig::Int.exit_code(), 130);
        assert_eq!(UserSig::Quit.exit_code(), 131);
        assert_eq!(UserSig::Term.exit_code(), 143);
        assert_eq!(UserSig::Quit.name(), "SIGQUIT");
    }
}

//! The signals a host sends to a supervised child's process group, as our own type: the
//! public API does not carry the system-call crate's.

/// A Unix signal, for [`SupervisorHandle::signal`](super::SupervisorHandle::signal): the
/// ones a host forwards to its child (a terminal's or a container runtime's) and the two of
/// the kill ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Signal {
    /// SIGHUP: the terminal went away.
    Hup,
    /// SIGINT: Ctrl-C.
    Int,
    /// SIGQUIT: Ctrl-\.
    Quit,
    /// SIGTERM: asked to end.
    Term,
    /// SIGKILL: ended, no way to catch it.
    Kill,
    /// SIGUSR1.
    Usr1,
    /// SIGUSR2.
    Usr2,
}

impl Signal {
    /// The signal's name, e.g. `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Hup => "SIGHUP",
            Signal::Int => "SIGINT",
            Signal::Quit => "SIGQUIT",
            Signal::Term => "SIGTERM",
            Signal::Kill => "SIGKILL",
            Signal::Usr1 => "SIGUSR1",
            Signal::Usr2 => "SIGUSR2",
        }
    }

    /// The signal's number on this platform (a shell reports a run it ended as `128 + N`).
    /// Windows has no signals: there each has the number Linux gives it, so a run that a
    /// forwarded Ctrl-C ended exits 130 there too.
    pub fn number(self) -> i32 {
        #[cfg(unix)]
        return self.to_rustix().as_raw();
        #[cfg(not(unix))]
        return match self {
            Signal::Hup => 1,
            Signal::Int => 2,
            Signal::Quit => 3,
            Signal::Kill => 9,
            Signal::Usr1 => 10,
            Signal::Usr2 => 12,
            Signal::Term => 15,
        };
    }

    /// The same signal, for the system calls.
    #[cfg(unix)]
    pub(crate) fn to_rustix(self) -> rustix::process::Signal {
        use rustix::process::Signal as S;
        match self {
            Signal::Hup => S::HUP,
            Signal::Int => S::INT,
            Signal::Quit => S::QUIT,
            Signal::Term => S::TERM,
            Signal::Kill => S::KILL,
            Signal::Usr1 => S::USR1,
            Signal::Usr2 => S::USR2,
        }
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Signal;

    #[test]
    fn numbers_are_the_platforms_and_names_say_which() {
        // The numbers POSIX fixes, whatever the platform.
        assert_eq!(Signal::Hup.number(), 1);
        assert_eq!(Signal::Int.number(), 2);
        assert_eq!(Signal::Quit.number(), 3);
        assert_eq!(Signal::Kill.number(), 9);
        assert_eq!(Signal::Term.number(), 15);
        // The others are the platform's own, as `kill -l` lists them.
        #[cfg(target_os = "linux")]
        assert_eq!((Signal::Usr1.number(), Signal::Usr2.number()), (10, 12));
        assert_eq!(Signal::Term.to_string(), "SIGTERM");
        assert_eq!(Signal::Usr2.name(), "SIGUSR2");
    }
}

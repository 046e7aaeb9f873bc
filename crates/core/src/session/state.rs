//! The typed state of a session's hot cache line: where it is in its life ([`Phase`], [`End`])
//! and four one-byte sets of named facts ([`Set`] of [`Said`], [`Host`], [`Side`], [`Note`]).
//!
//! Why sets of one byte rather than a `bool` each: the hot line holds all a line reads in 64
//! bytes (the registry's 100k-session targets; `BENCHMARKS.md`, "Issue 35"), and after the
//! anchors, the slot's generation and its policy, 8 bytes are left for these 23 facts.

use std::fmt;
use std::marker::PhantomData;

/// Where a session's stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The slot holds no session.
    Vacant,
    /// Registered, no line yet: only startup and the ceiling count (unless the clocks run
    /// from registration).
    Starting,
    /// Lines came, and its turn is under way.
    Working,
    /// A `result` (or a settle by hand) came and no progress since: the linger counts.
    Settled,
    /// Settled while the host's input is open, and no `user` message from the host since: a
    /// wait like a human wait (the idle and no-progress clocks stand still), which also holds
    /// the linger. Never while background tasks are outstanding (the session still works).
    WaitingForHost,
}

impl Phase {
    /// At least one line (or a tool boundary, or the host's word that the child started) was
    /// seen.
    pub(crate) fn seen_line(self) -> bool {
        !matches!(self, Phase::Vacant | Phase::Starting)
    }

    /// Settled by a `result`, waiting for its host or not.
    pub(crate) fn is_settled(self) -> bool {
        matches!(self, Phase::Settled | Phase::WaitingForHost)
    }
}

/// How far a session's supervision has come to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// Its deadlines fall due.
    Open,
    /// The host stops the process for a reason of its own (`Registry::stop_clocks`): no
    /// deadline falls due any more; lines still count.
    Stopping,
    /// Killed (the kill is in [`Rare::kill`](super::Rare::kill)): no deadlines, lines are
    /// ignored.
    Killed,
    /// The stream ended (`Registry::end`), killed before or not.
    Ended,
}

impl End {
    /// Ended or killed: no more deadlines, lines are ignored.
    pub(crate) fn is_done(self) -> bool {
        matches!(self, End::Killed | End::Ended)
    }
}

/// A member of a [`Set`]: an enum of at most 8 fieldless variants.
pub(crate) trait Member: Copy + fmt::Debug + 'static {
    /// Every member, in declaration order.
    const ALL: &'static [Self];
    /// The member's bit.
    fn bit(self) -> u8;
}

/// A set of `T`s in one byte.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Set<T>(u8, PhantomData<T>);

impl<T: Member> Set<T> {
    /// The empty set.
    pub(crate) const EMPTY: Set<T> = Set(0, PhantomData);

    /// Whether `m` is in the set.
    pub(crate) fn has(self, m: T) -> bool {
        self.0 & m.bit() != 0
    }

    /// Put `m` in the set (`on`) or take it out.
    pub(crate) fn set(&mut self, m: T, on: bool) {
        if on {
            self.0 |= m.bit();
        } else {
            self.0 &= !m.bit();
        }
    }

    /// Put `m` in the set.
    pub(crate) fn insert(&mut self, m: T) {
        self.set(m, true);
    }

    /// Take `m` out of the set.
    pub(crate) fn remove(&mut self, m: T) {
        self.set(m, false);
    }
}

impl<T: Member> Default for Set<T> {
    fn default() -> Self {
        Set::EMPTY
    }
}

impl<T: Member> fmt::Debug for Set<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(T::ALL.iter().filter(|m| self.has(**m)))
            .finish()
    }
}

/// Declares a [`Member`] enum.
macro_rules! members {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $v:ident,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub(crate) enum $name {
            $($(#[$vmeta])* $v,)+
        }

        impl Member for $name {
            const ALL: &'static [Self] = &[$($name::$v,)+];
            fn bit(self) -> u8 {
                1 << self as u8
            }
        }

        const _: () = assert!(<$name as Member>::ALL.len() <= 8, "a Set holds 8 members");
    };
}

members! {
    /// What the session was told in its current quiet spell (a line begins a new idle spell,
    /// progress a new no-progress spell): each is said once a spell.
    Said {
        /// `Extended`: its idle patience is extended.
        Extended,
        /// `Stalling { Idle }`.
        StallingIdle,
        /// `Stalling { NoProgress }`.
        StallingNoProgress,
    }
}

members! {
    /// What the host asked for at registration, or says of the session since.
    Host {
        /// The child reads its host's messages on stdin, and that input is still open
        /// (`SessionConfig::with_host_input`, until `Registry::input_closed`).
        InputOpen,
        /// The idle and no-progress clocks run from registration, as if it were a tool
        /// boundary (`SessionConfig::with_clocks_from_registration`); startup still waits
        /// for the first line.
        ClocksFromRegistration,
        /// The host samples the process tree (`Registry::observe_tree`): its state is in the
        /// registry's side table of trees.
        Tree,
        /// The session keeps a tally or must be an expected Claude Code session
        /// ([`Rare::watched`](super::Rare::watched)).
        Watched,
        /// The host cannot hand the output on (`Registry::output_blocked`): the idle and
        /// no-progress deadlines and their warnings do not fall due. Since when: the
        /// registry's side table of holds.
        OutputBlocked,
        /// The host may hold unread lines (`Registry::input_pending`): a deadline that falls
        /// due waits for them, at most [`INPUT_HOLD`](crate::config::INPUT_HOLD).
        InputPending,
        /// The host's control requests wait for their answers
        /// ([`Work::asked`](super::Work)): each is bounded.
        Asked,
        /// The host gave the session a dialect (`SessionConfig::with_dialect`): its lines are
        /// read through its `SessionDialect` in the registry's side table of dialects, until a
        /// line confirms it as Claude Code's (then they are read as any session's).
        Dialect,
    }
}

members! {
    /// What the session's cold part holds that the rules of every line read: each member says
    /// whether its field is worth a look, so an ordinary line never touches the cold part. A
    /// member is written only by the session method that changes its field.
    Side {
        /// A permission request is unanswered ([`Rare::pending_requests`](super::Rare)).
        Requests,
        /// An MCP tool call is outstanding ([`Rare::mcp_calls`](super::Rare)).
        Mcp,
        /// An announced back-off storm is under way ([`Work::storm`](super::Work)): its end
        /// may lie after the clocks' anchors.
        Retry,
        /// Background tasks are outstanding ([`Work::background`](super::Work)): after a
        /// `result` the session is still working, not waiting.
        Background,
        /// Claude Code's session id is known ([`Cold::cli_session`](super::Cold)).
        CliSession,
        /// A pause moved the idle anchor: the last line is
        /// [`Cold::pause_or_line`](super::Cold) (otherwise it is the idle anchor).
        LineMoved,
        /// A pause (or the first-line floor) moved the no-progress anchor: the last progress
        /// is [`Cold::last_progress`](super::Cold) (otherwise it is the anchor).
        ProgressMoved,
        /// Wakeups were declared and have not fired, a call that declares or cancels one
        /// awaits its result ([`Work::wakeups`](super::Work)), or Claude Code's hooks run
        /// ([`Work::hooks`](super::Work)).
        Waits,
    }
}

members! {
    /// What the session's lines and its deadline queue noted.
    Note {
        /// The first write tool completed: the pre-write extension is over.
        Wrote,
        /// Claude Code said `session_state_changed: requires_action` (or asked permission
        /// without a request id): a human wait is open until it says `running` or `idle`.
        RequiresAction,
        /// Filed in the deadline queue's near heap, and the next event moved later since (the
        /// queue re-files the entry when it reaches the heap's top).
        Raised,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_each_member_apart_and_prints_them_by_name() {
        let mut s = Set::<Host>::EMPTY;
        for m in Host::ALL {
            assert!(!s.has(*m));
            s.insert(*m);
            assert!(s.has(*m));
        }
        s.remove(Host::Tree);
        assert!(!s.has(Host::Tree));
        assert!(Host::ALL.iter().filter(|m| s.has(**m)).count() == Host::ALL.len() - 1);
        let mut one = Set::<Said>::default();
        one.set(Said::StallingIdle, true);
        assert_eq!(format!("{one:?}"), "{StallingIdle}");
        assert_eq!(std::mem::size_of::<Set<Side>>(), 1);
    }

    #[test]
    fn the_phases_say_what_was_seen() {
        assert!(!Phase::Starting.seen_line() && !Phase::Vacant.seen_line());
        assert!(Phase::WaitingForHost.seen_line() && Phase::WaitingForHost.is_settled());
        assert!(!Phase::Working.is_settled());
        assert!(End::Killed.is_done() && End::Ended.is_done());
        assert!(!End::Stopping.is_done() && !End::Open.is_done());
    }
}

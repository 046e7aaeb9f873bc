//! What differs per operating system, behind one interface: the rest of the supervisor (the
//! readers, the policy, the watching task, the kill ladder's order and graces, the receipt)
//! is the same everywhere and calls only what is here.
//!
//! | | Unix (`os/unix`) | Windows (`os/windows`) |
//! |---|---|---|
//! | spawn into a tree | its own process group; Linux: a child subreaper on request, the parent-death signal | a Job Object: spawned suspended, assigned, resumed (every descendant is a member); `KILL_ON_JOB_CLOSE`, so the tree dies with the host |
//! | graceful rung | SIGTERM to the group | stdin closed, then `CTRL_BREAK` to the child's console group (where there is a console) |
//! | kill | SIGKILL to the group and to every known descendant, by identity | `TerminateJobObject` |
//! | a kill is confirmed by | Linux: the descendants read from `/proc`, reaped | the job's accounting: no active process left |
//! | evidence | `/proc`: state, CPU, memory, TCP connections | the job's process list; each process's CPU, memory and I/O |
//! | leftovers of a child that exited | the same ladder on what `/proc` still shows | the same ladder on what the job still holds |
//!
//! The interface is [`ProcessTree`] (one tree of one child) and the functions re-exported
//! below; each backend implements all of it, so code outside `os` names no platform.

mod proc;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

use std::collections::HashSet;
use std::io;
use std::time::Duration;

pub(crate) use proc::Proc;
pub use proc::TREE_MARKER_VAR;

#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
use windows as imp;

/// The child's exit status as the run's record keeps it.
pub(crate) use imp::exit_of;
/// Read what the tree's processes are doing, for the policy and a kill's receipt.
pub(crate) use imp::read_sample;
/// Start a command in a tree of its own ([`Spawned`]).
pub(crate) use imp::spawn;
/// The host's own stop requests (Unix: SIGINT, SIGTERM; Windows: Ctrl-C, Ctrl-Break, close).
pub(crate) use imp::HostStops;
/// Orphans that ended and wait to be reaped (a child subreaper's SIGCHLD; never elsewhere).
pub(crate) use imp::OrphanExits;
/// The tree of one supervised child, as this platform knows it.
pub(crate) use imp::Tree;

use super::facilities::InForce;
use super::signal::Signal;

/// How often a tree is polled while waiting for it to die.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// `grace` from now, or a far-away instant when that cannot be represented (never panics).
pub(crate) fn after(grace: Duration) -> tokio::time::Instant {
    tokio::time::Instant::now()
        .checked_add(grace)
        .unwrap_or_else(crate::clock::far_future)
}

/// Where a rung notes what it sent to whom: the kill's receipt
/// (`supervisor/evidence/ladder_log.rs`).
pub(crate) trait RungLog: Send {
    /// `what` went to the process group `pgid`: its members still there got it.
    fn sent_group(&mut self, pgid: i32, what: &str);
    /// `what` went to `p` (a process the tree found now, by pid and start).
    fn sent_proc(&mut self, p: &Proc, what: &str);
}

/// Which processes' network use to read: those at most this old (ms), a tool's; `None`: none.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sockets(pub(crate) Option<u64>);

/// A child started in a tree of its own, and what its supervision runs with.
pub(crate) struct Spawned {
    pub(crate) child: tokio::process::Child,
    pub(crate) tree: Tree,
    pub(crate) facilities: InForce,
}

/// What [`spawn`] needs besides the command: the supervision's config and this tree's
/// [`TREE_MARKER_VAR`] value (already in the command's environment).
pub(crate) struct SpawnRequest<'a> {
    pub(crate) config: &'a super::config::SupervisorConfig,
    pub(crate) marker: &'a str,
}

/// One child's process tree: what the kill ladder, the sampler and the watching task ask of
/// the platform. Each backend's [`Tree`] implements it.
pub(crate) trait ProcessTree: Sized {
    /// The graceful rung closes the child's stdin before it signals: the end of input is the
    /// one polite stop every Windows console program understands.
    const GRACE_CLOSES_STDIN: bool;

    /// The child, as the tree identified it when it began (`None`: it was gone by then).
    fn root(&self) -> Option<Proc>;

    /// The live descendants, not counting the child. `deep` also looks for what may have
    /// left the tree's usual bounds (Linux: a marker in every environment).
    async fn scan(&mut self, deep: bool) -> Vec<Proc>;

    /// A deep scan that waits on nothing: the kill ladder's first look.
    async fn scan_deep_now(&mut self) -> Vec<Proc>;

    /// Reap the descendants that are our zombies; how many.
    fn reap(&mut self) -> usize;

    /// Whether `p` is still the same live process.
    fn alive(p: &Proc) -> bool;

    /// A rung of the ladder: send `sig` to the child's group (a group that is gone is not an
    /// error), noting in `log` what its members got.
    fn signal_group(&mut self, sig: Signal, log: &mut dyn RungLog);

    /// A rung of the ladder: send `sig` to each of `procs` (known by identity), noting it.
    fn signal_each(&mut self, procs: &[Proc], sig: Signal, log: &mut dyn RungLog);

    /// A host's signal, forwarded to the child's group
    /// ([`SupervisorHandle::signal`](super::SupervisorHandle::signal)).
    fn forward(&mut self, sig: Signal) -> io::Result<()>;

    /// Whether anything of the child's group is left (where the descendants are unknown, the
    /// only sign of leftovers).
    fn group_left(&self) -> bool;

    /// One round of the last stage: kill everything of the tree that is left (`deep`: look
    /// for escapees first), noting each descendant killed in `killed`; returns the live
    /// descendants the round found (empty once the kill is confirmed).
    async fn kill_round(
        &mut self,
        deep: bool,
        log: &mut dyn RungLog,
        killed: &mut HashSet<Proc>,
    ) -> Vec<Proc>;

    /// Where the descendants are unknown: stop what the child left in its group (the
    /// graceful rung, up to `grace` for it to empty, then kill until it does).
    async fn stop_group(&mut self, grace: Duration);

    /// Leave what the child left running to run on after the supervision (without
    /// [`SupervisorConfig::kill_leftovers`](super::SupervisorConfig::kill_leftovers)): Windows'
    /// job would otherwise end it when the tree is dropped.
    fn release(&mut self);

    /// The supervision of the child `root_pid` is over.
    fn forget_root(root_pid: i32);

    /// `pid`, a child of this process outside every supervised tree, is never taken for an
    /// orphan of one.
    fn keep_apart(pid: i32);

    /// Kill every process left of the trees of host `host_pid`, a host that is gone; how
    /// many.
    fn kill_marked(host_pid: u32) -> usize;

    /// Reap every orphan that ended (a child subreaper's); how many.
    fn reap_orphans() -> usize;
}

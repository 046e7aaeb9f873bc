//! The kernel facilities the supervisor's guarantees rest on, and which of them this host
//! refused. A refused facility is never a failure: the supervisor goes on with what is left
//! (the process group, and whatever `/proc` still shows) and says which guarantee is gone.

/// A kernel facility a guarantee of the supervisor rests on (Linux; on Windows, the Job
/// Object).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Facility {
    /// `PR_SET_CHILD_SUBREAPER` (refused by qemu-user, some sandboxes, kernels before 3.4):
    /// without it, a descendant that leaves the process group and loses its parent
    /// re-parents to PID 1, out of reach of the reaping and of the orphan claim.
    Subreaper,
    /// `PR_SET_PDEATHSIG` (refused by some sandboxes): without it, the child does not get
    /// SIGTERM when the host dies by SIGKILL.
    ParentDeathSignal,
    /// A readable `/proc`: without it, the descendants are unknown; only the process group is
    /// signalled, and what left the group (`setsid`) and ignores SIGTERM can survive.
    ProcFs,
    /// A Job Object to hold the child and its descendants (Windows; refused where the host
    /// runs in a job that allows no nested job, before Windows 8): without it only the child
    /// is known and killed, and the tree does not die with the host.
    JobObject,
}

impl Facility {
    /// Every facility, in a fixed order.
    pub const ALL: [Facility; 4] = [
        Facility::Subreaper,
        Facility::ParentDeathSignal,
        Facility::ProcFs,
        Facility::JobObject,
    ];

    /// A short stable name: `subreaper`, `parent_death_signal`, `proc`, `job_object`.
    pub fn as_str(self) -> &'static str {
        match self {
            Facility::Subreaper => "subreaper",
            Facility::ParentDeathSignal => "parent_death_signal",
            Facility::ProcFs => "proc",
            Facility::JobObject => "job_object",
        }
    }

    /// The guarantee lost without it, in a few words.
    pub fn lost_guarantee(self) -> &'static str {
        match self {
            Facility::Subreaper => {
                "orphaned descendants re-parent to PID 1: they are neither reaped nor claimed"
            }
            Facility::ParentDeathSignal => {
                "the child is not told when the watchdog dies by SIGKILL"
            }
            Facility::ProcFs => {
                "no /proc: only the process group is signalled; descendants that left it are unknown and orphans are not reaped"
            }
            Facility::JobObject => {
                "no job object: only the child is known and killed; its descendants can outlive it and the watchdog"
            }
        }
    }
}

impl std::fmt::Display for Facility {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one supervised child runs with.
#[derive(Debug, Clone, Default)]
pub(crate) struct InForce {
    /// Orphans re-parent to this process (a subreaper, or PID 1).
    pub(crate) subreaper: bool,
    /// The descendants are known (Linux, with `/proc`; Windows, in a job).
    pub(crate) tree_known: bool,
    /// What was asked for or needed and refused, in the order of [`Facility::ALL`].
    pub(crate) unavailable: Vec<Facility>,
}

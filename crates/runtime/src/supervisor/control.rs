//! What handles ask of the task that watches the child.

use super::report::KillCause;
use super::signal::Signal;

/// Control messages from handles to the supervising task.
#[derive(Debug)]
pub(crate) enum Control {
    /// Run the ladder.
    Kill(KillCause),
    /// Forward a signal to the group.
    Signal(Signal),
    /// SIGKILL the whole tree now.
    KillTree(KillCause),
}

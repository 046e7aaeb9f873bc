//! One process as the tree knows it, and the variable that marks the processes of a tree.

/// The environment variable that marks every process started under a supervisor.
pub const TREE_MARKER_VAR: &str = "AGENT_SDK_WATCHDOG_TREE";

/// One process, identified by pid and start time (immune to pid reuse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Proc {
    pub(crate) pid: i32,
    pub(crate) start: u64,
}

//! Knowing every descendant of the child, so a kill can reach all of them.
//!
//! On Linux the tree is read from `/proc/<pid>/stat` (parent chains, with start times so a
//! reused pid is never mistaken for a descendant). Descendants seen once stay known after
//! their parent dies (they may have been re-parented to PID 1 or to us as a subreaper), and
//! every process whose environment carries this tree's marker variable is counted too (a
//! daemon that double-forked before any scan still inherits the environment).
//! Elsewhere the tree is unknown and only the process group is signalled.

mod proc;

pub(crate) use proc::Proc;
pub use proc::TREE_MARKER_VAR;

#[cfg(target_os = "linux")]
mod descendants;
#[cfg(target_os = "linux")]
mod proc_snapshot;
#[cfg(target_os = "linux")]
mod procfs;
#[cfg(target_os = "linux")]
mod reaping;

#[cfg(target_os = "linux")]
pub(crate) use descendants::Tree;

#[cfg(not(target_os = "linux"))]
mod unknown;

#[cfg(not(target_os = "linux"))]
pub(crate) use unknown::Tree;

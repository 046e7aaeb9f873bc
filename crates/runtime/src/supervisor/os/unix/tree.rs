//! Knowing every descendant of the child, so a kill can reach all of them.
//!
//! On Linux the tree is read from `/proc/<pid>/stat` (parent chains, with start times so a
//! reused pid is never mistaken for a descendant). Descendants seen once stay known after
//! their parent dies (they may have been re-parented to PID 1 or to us as a subreaper), and
//! every process whose environment carries this tree's marker variable is counted too (a
//! daemon that double-forked before any scan still inherits the environment).
//! Elsewhere the tree is unknown and only the process group is signalled.
//!
//! The same reading of `/proc` gives what each process is doing (`sample`: its state, CPU
//! time, memory, command line and TCP connections, `sockets`), the facts the policy's rules
//! on the tree and a kill's receipt are made of; and a process is signalled by its identity,
//! never by a pid the kernel may have given to another process since (`signal_proc`).

#[cfg(target_os = "linux")]
mod descendants;
#[cfg(target_os = "linux")]
mod proc_snapshot;
#[cfg(target_os = "linux")]
mod procfs;
#[cfg(target_os = "linux")]
mod reaping;
#[cfg(target_os = "linux")]
mod sample;
#[cfg(target_os = "linux")]
mod signal_proc;
#[cfg(target_os = "linux")]
mod sockets;

#[cfg(target_os = "linux")]
pub(crate) use descendants::Tree;
#[cfg(target_os = "linux")]
pub(crate) use sample::read as read_sample;
#[cfg(target_os = "linux")]
pub(crate) use signal_proc::signal as signal_proc;

#[cfg(not(target_os = "linux"))]
mod unknown;

#[cfg(not(target_os = "linux"))]
pub(crate) use unknown::{read_sample, signal_proc, Tree};

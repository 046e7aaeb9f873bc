//! Reading the tree on a blocking thread: for the sampler, and for a receipt.

use std::time::Duration;

use tokio::task::JoinHandle;
use watchdog_core::evidence::TreeSample;

use crate::supervisor::os::{read_sample, ProcessTree, Sockets, Tree};

/// How long a reading for a receipt may take before the ladder goes on without it.
const RECEIPT_READ: Duration = Duration::from_secs(2);

/// Read the tree on a blocking thread: the child and `tree`'s live descendants (a shallow
/// walk, or a deep scan), with the sockets of the processes at most `sockets` ms old.
pub(super) async fn read_tree(
    tree: &mut Tree,
    deep: bool,
    sockets: Sockets,
) -> JoinHandle<TreeSample> {
    let procs = tree.scan(deep).await;
    let root = tree.root();
    tokio::task::spawn_blocking(move || read_sample(root, &procs, sockets))
}

/// The tree as it stands now, for a receipt: everything, sockets included; `None` when the
/// reading did not return in time.
pub(super) async fn read_now(tree: &mut Tree) -> Option<TreeSample> {
    let reading = read_tree(tree, false, Sockets(Some(u64::MAX))).await;
    match tokio::time::timeout(RECEIPT_READ, reading).await {
        Ok(Ok(s)) => Some(s),
        _ => None,
    }
}

//! One reading of all of `/proc`, shared by every tree that asks for a full scan at about
//! the same time, made on a thread of its own.

use std::collections::HashMap;
use std::sync::Mutex;

use super::procfs::{all, Stat};

/// One reading of all of `/proc`: every process and its parent. Shared by every tree that
/// asked for a full scan before the reading began ([`snapshot`]).
pub(super) struct Snapshot {
    pub(super) procs: Vec<Stat>,
    pub(super) by_pid: HashMap<i32, Stat>,
    pub(super) children: HashMap<i32, Vec<i32>>,
}

impl Snapshot {
    pub(super) fn read() -> Snapshot {
        let procs = all();
        let by_pid = procs.iter().map(|s| (s.pid, *s)).collect();
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        for s in &procs {
            children.entry(s.ppid).or_default().push(s.pid);
        }
        Snapshot {
            procs,
            by_pid,
            children,
        }
    }
}

/// The requests waiting for the next reading of `/proc`.
struct Scanner {
    waiting: Mutex<Vec<tokio::sync::oneshot::Sender<std::sync::Arc<Snapshot>>>>,
    wake: std::sync::Condvar,
}

/// A reading of all of `/proc` that began after this call: as fresh as one made here, but
/// made once for every tree that asks at about the same time, on a thread of its own.
///
/// A full scan reads every process on the machine (a few milliseconds per thousand
/// processes). When many children of one host are killed together (a shared
/// [`Watchdog`](crate::Watchdog) whose deadlines fall close together), each kill ladder
/// reading `/proc` for itself on the runtime's threads took the CPU and the threads from
/// the timer: one reading now serves all the ladders that wait, and the runtime's threads
/// stay free. Falls back to reading here if the thread cannot run.
pub(super) async fn snapshot() -> std::sync::Arc<Snapshot> {
    use std::sync::{Arc, OnceLock};
    static SCANNER: OnceLock<Option<Arc<Scanner>>> = OnceLock::new();
    let scanner = SCANNER.get_or_init(|| {
        let s = Arc::new(Scanner {
            waiting: Mutex::new(Vec::new()),
            wake: std::sync::Condvar::new(),
        });
        let worker = s.clone();
        std::thread::Builder::new()
            .name("watchdog-proc-scan".into())
            .spawn(move || loop {
                let asked = {
                    let mut w = worker
                        .waiting
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    while w.is_empty() {
                        w = worker
                            .wake
                            .wait(w)
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                    }
                    std::mem::take(&mut *w)
                };
                // Every request was made before this reading begins. Should a reading
                // ever panic, the requests are dropped (their trees read `/proc`
                // themselves) and the thread goes on serving the next ones.
                if let Ok(snap) = std::panic::catch_unwind(Snapshot::read) {
                    let snap = Arc::new(snap);
                    for tx in asked {
                        let _ = tx.send(snap.clone());
                    }
                }
            })
            .ok()
            .map(|_| s)
    });
    if let Some(s) = scanner {
        let (tx, rx) = tokio::sync::oneshot::channel();
        s.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(tx);
        s.wake.notify_one();
        if let Ok(snap) = rx.await {
            return snap;
        }
    }
    Arc::new(Snapshot::read())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shared reading of `/proc` begins after it was asked for: a process started just
    /// before the call is in it, for every tree that asked at the same time.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_shared_snapshot_is_as_fresh_as_the_request() {
        for _ in 0..20 {
            let mut child = std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap();
            let pid = child.id() as i32;
            let (a, b) = tokio::join!(snapshot(), snapshot());
            let _ = child.kill();
            let _ = child.wait();
            assert!(a.by_pid.contains_key(&pid) && b.by_pid.contains_key(&pid));
        }
    }
}

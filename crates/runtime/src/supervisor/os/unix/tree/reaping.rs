//! Ending what a tree leaves behind: reaping its zombies re-parented to us, and killing every
//! marked process of a host that is gone.

use super::descendants::{roots, Tree};
use super::procfs::{all, children_files, children_of, read_marker, stat, Marker, Stat};
use crate::supervisor::os::Proc;

impl Tree {
    /// SIGKILL every process whose environment carries a tree marker of host `host_pid`
    /// (`MARKER=<host_pid>.<n>`), again until a pass finds none (a forking process is
    /// caught by a later pass); returns how many were signalled. Reads every readable
    /// environment on the machine: for when the host itself is gone.
    pub(crate) fn kill_marked(host_pid: u32) -> usize {
        let needle = format!("{}={host_pid}.", crate::supervisor::os::TREE_MARKER_VAR).into_bytes();
        let me = std::process::id() as i32;
        let mut killed = 0;
        // Passes that found nothing but environments that read empty (an `exec` half
        // done, or a process with no environment at all): a few more, then no more.
        let mut unsure_passes = 0;
        for _ in 0..100 {
            let Ok(dir) = std::fs::read_dir("/proc") else {
                break;
            };
            let (mut found, mut unsure) = (0, 0);
            for e in dir.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                    continue;
                };
                if pid == me || stat(pid).is_none_or(|s| s.zombie || s.kernel) {
                    continue;
                }
                match read_marker(pid) {
                    Marker::Has(m) if m.starts_with(&needle) => {
                        if crate::supervisor::os::unix::signals::process(
                            pid,
                            rustix::process::Signal::KILL,
                        )
                        .is_ok()
                        {
                            found += 1;
                        }
                    }
                    Marker::NotYet => unsure += 1,
                    Marker::Has(_) | Marker::No => {}
                }
            }
            killed += found;
            if found == 0 {
                unsure_passes += 1;
                if unsure == 0 || unsure_passes > 6 {
                    break;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        killed
    }

    /// Reap every zombie child of this process that no supervisor owns: the orphans a child
    /// subreaper or PID 1 inherits, reaped as they come (on SIGCHLD) so that hundreds of
    /// short-lived background processes do not pile up as `<defunct>` entries until the end.
    /// Only for a host that starts no other processes ([`Tree::claim_orphans`]). Reads this
    /// process's children from `/proc` (without it they cannot be told from the supervised
    /// children, which tokio reaps: nothing is reaped). Returns how many were reaped.
    pub(crate) fn reap_orphans() -> usize {
        use rustix::process::{waitpid, Pid, WaitOptions};
        let me = std::process::id() as i32;
        let ours: Vec<Stat> = if children_files() {
            children_of(me).into_iter().filter_map(stat).collect()
        } else {
            all().into_iter().filter(|s| s.ppid == me).collect()
        };
        let roots = roots().clone();
        ours.iter()
            .filter(|s| s.zombie && s.ppid == me && !roots.contains(&s.pid))
            .filter(|s| {
                Pid::from_raw(s.pid)
                    .is_some_and(|p| matches!(waitpid(Some(p), WaitOptions::NOHANG), Ok(Some(_))))
            })
            .count()
    }

    /// Reap known descendants that are our zombies (re-parented to us as a subreaper).
    /// Never touches the child itself (tokio owns it) nor any other child of this process.
    pub(crate) fn reap(&mut self) -> usize {
        let me = std::process::id() as i32;
        let mut reaped = 0;
        if self.claim_orphans {
            // Orphans that ended before any scan knew them are ours to reap too.
            let roots = roots().clone();
            // Our own children, from the kernel's list when it has one (not all of /proc).
            let ours: Vec<Stat> = if children_files() {
                children_of(me).into_iter().filter_map(stat).collect()
            } else {
                all()
            };
            for s in ours {
                if s.ppid == me && s.zombie && !roots.contains(&s.pid) {
                    self.known.insert(Proc {
                        pid: s.pid,
                        start: s.start,
                    });
                }
            }
        }
        for p in &self.known {
            let Some(s) = stat(p.pid) else { continue };
            if s.start == p.start && s.zombie && s.ppid == me {
                if let Some(pid) = rustix::process::Pid::from_raw(p.pid) {
                    if let Ok(Some(_)) =
                        rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG)
                    {
                        reaped += 1;
                    }
                }
            }
        }
        reaped
    }
}

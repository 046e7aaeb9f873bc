//! Starting the child so that it dies with the host (Linux: `PR_SET_PDEATHSIG`).
//!
//! The parent-death signal is sent when the *thread* that forked the child exits, not when the
//! process does. A child spawned from a tokio worker or blocking thread would get SIGTERM
//! whenever that thread is retired. So every child is forked from one thread that lives as
//! long as the process: the spawner thread, started on first use, which enters the caller's
//! runtime, spawns, and hands the child back.

use std::io;

use tokio::process::{Child, Command};

/// Spawn `cmd` (inside the current tokio runtime); with `die_with_host`, on Linux, the child
/// gets SIGTERM when the host process dies.
pub(crate) fn spawn(mut cmd: Command, die_with_host: bool) -> io::Result<Child> {
    #[cfg(target_os = "linux")]
    if die_with_host {
        set_parent_death_signal(&mut cmd);
        return on_spawner_thread(cmd);
    }
    let _ = die_with_host;
    cmd.spawn()
}

/// Ask, in the forked child before `exec`, for SIGTERM when the parent (thread) dies; and if
/// the parent is already gone (it died between fork and here), fail the spawn.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn set_parent_death_signal(cmd: &mut Command) {
    use rustix::process::{getppid, set_parent_process_death_signal, Signal};
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child, where only async-signal-safe calls are
    // allowed. It makes two raw system calls through rustix (`prctl(PR_SET_PDEATHSIG)` and
    // `getppid`), allocates nothing, takes no lock, and touches no state shared with the
    // parent; `parent` is a plain integer copied into the closure before the fork.
    unsafe {
        cmd.pre_exec(move || {
            set_parent_process_death_signal(Some(Signal::TERM))?;
            if getppid() != Some(parent) {
                return Err(io::Error::other("the supervising process is gone"));
            }
            Ok(())
        });
    }
}

#[cfg(target_os = "linux")]
type Job = Box<dyn FnOnce() + Send>;

/// Run the spawn on the process-long spawner thread and wait for it (a fork and exec: short).
#[cfg(target_os = "linux")]
fn on_spawner_thread(mut cmd: Command) -> io::Result<Child> {
    use std::sync::mpsc;
    use std::sync::{Mutex, OnceLock};
    static SPAWNER: OnceLock<Option<Mutex<mpsc::Sender<Job>>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("watchdog-spawner".into())
            .spawn(move || {
                // Lives as long as the process: the senders sit in a static.
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let Some(spawner) = spawner else {
        // No thread could be started: spawn here, without the death signal's guarantee.
        return cmd.spawn();
    };
    let handle = tokio::runtime::Handle::try_current()
        .map_err(|_| io::Error::other("Supervisor::spawn needs a tokio runtime"))?;
    let (reply, answer) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _in_runtime = handle.enter();
        let _ = reply.send(cmd.spawn());
    });
    spawner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send(job)
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the spawner thread is gone"))?
}

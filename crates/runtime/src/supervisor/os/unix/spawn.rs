//! Starting the child so that it dies with the host (Linux: `PR_SET_PDEATHSIG`).
//!
//! The parent-death signal is sent when the *thread* that forked the child exits, not when the
//! process does. A child spawned from a tokio worker or blocking thread would get SIGTERM
//! whenever that thread is retired. So every child is forked from one thread that lives as
//! long as the process: the spawner thread, started on first use, which enters the caller's
//! runtime, spawns, and hands the child back.
//!
//! A host that refuses the death signal (some sandboxes filter `prctl`) still gets its child:
//! the first refusal is remembered, the child is started again without it, and the caller is
//! told the guarantee is gone.

use std::io;
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::process::{Child, Command};

/// This host refused `PR_SET_PDEATHSIG` once: no child asks for it again. Read in the forked
/// child too (its copy of the parent's memory at the fork).
#[cfg(target_os = "linux")]
static DEATH_SIGNAL_REFUSED: AtomicBool = AtomicBool::new(false);

/// The error a forked child reports when `PR_SET_PDEATHSIG` is refused: one `execve` and the
/// other steps of a spawn never return, so it cannot be taken for theirs.
#[cfg(target_os = "linux")]
const REFUSED_ERRNO: i32 = rustix::io::Errno::NOTSUP.raw_os_error();

/// Spawn `cmd` (inside the current tokio runtime); with `die_with_host`, on Linux, the child
/// gets SIGTERM when the host process dies. The second value: whether that death signal is
/// in force (false without `die_with_host`, off Linux, or where the host refuses it).
pub(crate) fn spawn(mut cmd: Command, die_with_host: bool) -> io::Result<(Child, bool)> {
    #[cfg(target_os = "linux")]
    if die_with_host {
        set_parent_death_signal(&mut cmd);
        let refused_before = DEATH_SIGNAL_REFUSED.load(Ordering::Relaxed);
        let (cmd, first) = on_spawner_thread(cmd)?;
        return match first {
            Err(e) if e.raw_os_error() == Some(REFUSED_ERRNO) && !refused_before => {
                // Remembered before the second fork: that child skips the call.
                DEATH_SIGNAL_REFUSED.store(true, Ordering::Relaxed);
                let (_, second) = on_spawner_thread(cmd)?;
                Ok((second?, false))
            }
            r => Ok((r?, !refused_before)),
        };
    }
    let _ = die_with_host;
    Ok((cmd.spawn()?, false))
}

/// Ask, in the forked child before `exec`, for SIGTERM when the parent (thread) dies (unless
/// the host refused it before: then nothing); and if the parent is already gone (it died
/// between fork and here), fail the spawn. A refusal fails this spawn with
/// [`REFUSED_ERRNO`], for [`spawn`] to start it again without.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn set_parent_death_signal(cmd: &mut Command) {
    use rustix::process::{getppid, set_parent_process_death_signal, Signal};
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child, where only async-signal-safe calls are
    // allowed. It makes two raw system calls through rustix (`prctl(PR_SET_PDEATHSIG)` and
    // `getppid`), reads one atomic, allocates nothing, takes no lock, and touches no state
    // shared with the parent; `parent` is a plain integer copied into the closure before the
    // fork.
    unsafe {
        cmd.pre_exec(move || {
            if !DEATH_SIGNAL_REFUSED.load(Ordering::Relaxed) {
                if set_parent_process_death_signal(Some(Signal::TERM)).is_err() {
                    return Err(io::Error::from_raw_os_error(REFUSED_ERRNO));
                }
                if getppid() != Some(parent) {
                    return Err(io::Error::other("the supervising process is gone"));
                }
            }
            Ok(())
        });
    }
}

#[cfg(target_os = "linux")]
type Job = Box<dyn FnOnce() + Send>;

/// Run the spawn on the process-long spawner thread and wait for it (a fork and exec: short).
/// Hands the command back with the spawn's result (to start it again); fails only when no
/// spawn could be tried.
#[cfg(target_os = "linux")]
fn on_spawner_thread(mut cmd: Command) -> io::Result<(Command, io::Result<Child>)> {
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
        let child = cmd.spawn();
        return Ok((cmd, child));
    };
    let handle = tokio::runtime::Handle::try_current()
        .map_err(|_| io::Error::other("Supervisor::spawn needs a tokio runtime"))?;
    let (reply, answer) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _in_runtime = handle.enter();
        let child = cmd.spawn();
        let _ = reply.send((cmd, child));
    });
    spawner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send(job)
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the spawner thread is gone"))
}

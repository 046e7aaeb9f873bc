//! Starting a supervised child: the process (through [`super::spawn`]), its session on a
//! policy cell ([`super::policy`]), and the tasks that read it ([`super::read`]) and watch it
//! ([`super::watch`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::process::Command;
use tokio::sync::{mpsc, oneshot, Mutex as AsyncMutex, Semaphore};

use super::drain::Readers;
use super::lines::OUTPUT_BUDGET;
use super::os::{self, SpawnRequest, Spawned, TREE_MARKER_VAR};
use super::policy::Policy;
use super::read::{read_stderr, read_stdout, Queue};
use super::shared::Shared;
use super::watch::Watch;
use std::path::PathBuf;

use watchdog_core::config::PositiveDuration;

use super::config::SupervisorConfig;
use super::facilities::Facility;
use super::handle::{StdinWriter, SupervisorHandle};
use super::report::{Batch, Report};

static TREES: AtomicU64 = AtomicU64::new(0);

/// A child started, and its tasks: what a [`Supervisor`](super::Supervisor) is made of.
pub(crate) struct Started {
    pub(crate) handle: SupervisorHandle,
    pub(crate) started: std::time::Instant,
    pub(crate) started_wall: u64,
    pub(crate) budget: Arc<Semaphore>,
    pub(crate) stdin: Option<StdinWriter>,
    pub(crate) output: mpsc::UnboundedReceiver<Batch>,
    pub(crate) report: oneshot::Receiver<Report>,
    pub(crate) unavailable: Vec<Facility>,
}

pub(crate) fn spawn(mut cmd: Command, cfg: SupervisorConfig) -> Result<Started, SpawnError> {
    tokio::runtime::Handle::try_current().map_err(|_| SpawnError::NoRuntime)?;
    let program = cmd.as_std().get_program().to_string_lossy().into_owned();
    if let Some(dir) = cmd.as_std().get_current_dir() {
        if !dir.is_dir() {
            return Err(SpawnError::Cwd {
                program,
                cwd: dir.to_path_buf(),
            });
        }
    }
    let marker = format!(
        "{}.{}",
        std::process::id(),
        TREES.fetch_add(1, Ordering::Relaxed)
    );
    let stdin = if cfg.pipe_stdin {
        std::process::Stdio::piped()
    } else {
        std::process::Stdio::null()
    };
    cmd.env(TREE_MARKER_VAR, &marker)
        .stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let started = tokio::time::Instant::now();
    let started_wall = crate::clock::wall_ms();
    // A facility the host refuses takes its guarantee away, never the supervision.
    let request = SpawnRequest {
        config: &cfg,
        marker: &marker,
    };
    let Spawned {
        mut child,
        tree,
        facilities,
    } = os::spawn(cmd, request).map_err(|source| SpawnError::Program {
        program: program.clone(),
        source,
    })?;
    let unavailable: Vec<Facility> = facilities.unavailable.clone();
    let pid = child.id().unwrap_or(0);

    // A child reading the host's messages on the stdin we pipe waits for its host after each
    // `result` (until the input ends: [`StdinWriter::close`]).
    let host_input = cfg.stream_json_input && cfg.pipe_stdin;
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let (ctrl_tx, ctrl_rx) = mpsc::unbounded_channel();
    let sampled = cfg.tree_sample.is_some();
    let policy = cfg.policy.clone().map(|s| {
        let open = host_input || s.host_input();
        let tree = sampled || s.tree_evidence();
        Policy::register(
            s.with_host_input(open).with_tree_evidence(tree),
            cfg.watchdog.as_ref(),
            started.into_std(),
            started_wall,
            out_tx.clone(),
            ctrl_tx.clone(),
        )
    });
    let shared = Arc::new(Shared::new(policy));
    let budget = Arc::new(Semaphore::new(OUTPUT_BUDGET));
    let (report_tx, report_rx) = oneshot::channel();
    let pipe = Arc::new(AsyncMutex::new(child.stdin.take()));

    let mut readers = Readers::default();
    if let Some(stdout) = child.stdout.take() {
        let queue = Queue {
            out: out_tx.clone(),
            budget: budget.clone(),
            shared: shared.clone(),
        };
        let (shared, hook) = (shared.clone(), cfg.on_stdout_line.clone());
        readers.spawn(|state| read_stdout(stdout, cfg.max_line.get(), shared, hook, queue, state));
    }
    if let Some(stderr) = child.stderr.take() {
        let queue = Queue {
            out: out_tx.clone(),
            budget: budget.clone(),
            shared: shared.clone(),
        };
        let shared = shared.clone();
        readers.spawn(|state| read_stderr(stderr, cfg.max_line.get(), shared, queue, state));
    }
    let stdin = cfg.pipe_stdin.then(|| StdinWriter {
        pipe: pipe.clone(),
        shared: shared.clone(),
    });
    let watch_shared = shared.clone();
    let sampler_period = cfg
        .tree_sample
        .map(PositiveDuration::get)
        .filter(|_| cfg.policy.is_some());
    let watch = Watch {
        child,
        tree,
        pid: pid as i32,
        program,
        started,
        cfg,
        shared,
        out: out_tx,
        ctrl: ctrl_rx,
        pipe,
        readers,
        signalled: None,
        sampler: super::evidence::Sampler::new(sampler_period),
        facilities,
    };
    tokio::spawn(watch.run(report_tx));
    Ok(Started {
        handle: SupervisorHandle {
            ctrl: ctrl_tx,
            pid,
            shared: watch_shared,
        },
        started: started.into_std(),
        started_wall,
        budget,
        stdin,
        output: out_rx,
        report: report_rx,
        unavailable,
    })
}

/// The child could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The program could not be executed (missing binary, no permission, ...).
    #[error("cannot start `{program}`: {source}")]
    Program {
        /// The program as given.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The working directory does not exist or is not a directory.
    #[error("cannot start `{program}`: working directory {} is not a directory", cwd.display())]
    Cwd {
        /// The program as given.
        program: String,
        /// The directory.
        cwd: PathBuf,
    },
    /// Called outside a tokio runtime.
    #[error("Supervisor::spawn needs a tokio runtime")]
    NoRuntime,
}

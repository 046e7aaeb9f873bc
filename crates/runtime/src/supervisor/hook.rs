//! The stdout line hook: the caller's code, run on the stdout reader for every line that
//! parsed, with the view the supervisor built for the policy (so the caller need not parse
//! the line again).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use watchdog_core::{Class, LineView};

use super::lines::LineMeta;

/// What the supervisor knows of one stdout line, given to the
/// [`SupervisorConfig::on_stdout_line`](super::SupervisorConfig::on_stdout_line) hook with its
/// view.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LineInfo<'a> {
    /// The line's bytes, without its `\n`.
    pub bytes: &'a [u8],
    /// The line's position in stdout, from 0, counting every line and every piece of an
    /// over-long line (as [`Report::stdout_lines`](super::Report::stdout_lines) does): the
    /// lines of the [`StdoutBatch`](super::StdoutBatch)es handed out, numbered in order.
    pub index: u64,
    /// When it was read: the instant the policy observed it at ([`StdoutBatch::at`](super::StdoutBatch::at)).
    pub at: Instant,
    /// The class the policy gave it.
    pub class: Class,
    /// It has no `parent_tool_use_id` (not a subagent's line).
    pub top_level: bool,
}

type HookFn = dyn FnMut(&LineView<'_>, &LineInfo<'_>) + Send;

/// A hook run for each parsed stdout line (see
/// [`SupervisorConfig::on_stdout_line`](super::SupervisorConfig::on_stdout_line)). Clones share
/// the same closure.
#[derive(Clone)]
pub struct StdoutHook(Arc<Mutex<Box<HookFn>>>);

impl std::fmt::Debug for StdoutHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdoutHook").finish_non_exhaustive()
    }
}

impl StdoutHook {
    /// Wrap a closure.
    pub fn new(f: impl FnMut(&LineView<'_>, &LineInfo<'_>) + Send + 'static) -> Self {
        StdoutHook(Arc::new(Mutex::new(Box::new(f))))
    }

    /// Run the hook for the lines of `metas` that parsed (`views`, one per line, `None` for a
    /// piece or an unparseable line). `first` is the index of the first line. Returns how many
    /// calls panicked (each is caught; the next line still gets its call).
    pub(crate) fn call(
        &self,
        bytes: &[u8],
        at: Instant,
        first: u64,
        metas: &[LineMeta],
        views: &[Option<LineView<'_>>],
    ) -> u64 {
        let mut f = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut panics = 0;
        for (i, (m, view)) in metas.iter().zip(views).enumerate() {
            let Some(view) = view else { continue };
            let info = LineInfo {
                bytes: bytes.get(m.start..m.start + m.len).unwrap_or_default(),
                index: first + i as u64,
                at,
                class: m.class,
                top_level: m.top_level,
            };
            if catch_unwind(AssertUnwindSafe(|| f(view, &info))).is_err() {
                panics += 1;
            }
        }
        panics
    }
}

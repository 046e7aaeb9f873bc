//! Finding the files and reading them on every core.
//!
//! Work is shared through one atomic index into the file list (largest files first, so the
//! last file to finish is a small one); each worker reads whole files with a 1 MiB buffer. No
//! thread pool crate: two dozen lines of `std::thread::scope` do it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::transcript::{read_session, SessionLog};

/// A file that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The path.
    pub file: PathBuf,
    /// Why.
    pub reason: String,
}

/// Files to read (with sizes) and paths that could not be used.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Files, largest first.
    pub files: Vec<(PathBuf, u64)>,
    /// Unusable paths.
    pub skipped: Vec<Skipped>,
}

/// Collect files: explicit files as given, folders recursively (`*.jsonl` files only; symbolic
/// links to folders are not followed, so a link cycle cannot trap the walk).
pub fn discover(paths: &[PathBuf]) -> Discovery {
    let mut d = Discovery::default();
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => walk(p, &mut d),
            Ok(m) => d.files.push((p.clone(), m.len())),
            Err(e) => d.skipped.push(Skipped {
                file: p.clone(),
                reason: e.to_string(),
            }),
        }
    }
    d.files
        .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    d.files.dedup_by(|a, b| a.0 == b.0);
    d
}

fn walk(dir: &Path, d: &mut Discovery) {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            d.skipped.push(Skipped {
                file: dir.to_path_buf(),
                reason: e.to_string(),
            });
            return;
        }
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(&path, d);
            continue;
        }
        let is_jsonl = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".jsonl"));
        if !is_jsonl {
            continue;
        }
        match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => {} // a link to a folder: not followed
            Ok(m) => d.files.push((path, m.len())),
            Err(e) => d.skipped.push(Skipped {
                file: path,
                reason: e.to_string(),
            }),
        }
    }
}

/// The number of worker threads to use.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Apply `f` to every item on `threads` threads; results keep the items' order.
pub(crate) fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut local = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    local.push((i, f(item)));
                }
                if let Ok(mut o) = out.lock() {
                    o.extend(local);
                }
            });
        }
    });
    let mut v = out.into_inner().unwrap_or_else(|e| e.into_inner());
    v.sort_by_key(|(i, _)| *i);
    v.into_iter().map(|(_, r)| r).collect()
}

/// Read every file in parallel. `on_bytes` is called (from worker threads) as bytes are read.
// The throughput bench measures reading alone with it; not an API for users.
#[doc(hidden)]
pub fn read_all(
    files: &[(PathBuf, u64)],
    threads: usize,
    on_bytes: &(dyn Fn(u64) + Sync),
) -> Vec<Result<SessionLog, Skipped>> {
    par_map(files, threads, |(path, _)| {
        read_session(path, &mut |n| on_bytes(n)).map_err(|e| Skipped {
            file: path.clone(),
            reason: e.to_string(),
        })
    })
}

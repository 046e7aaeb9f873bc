//! Reading `/proc`: a process's `stat` line (parent, group, start time, zombie or not), its
//! children, and the tree marker in its environment.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy)]
pub(super) struct Stat {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) pgrp: i32,
    pub(super) zombie: bool,
    /// A kernel thread: it has no environment, so never a marker.
    pub(super) kernel: bool,
    pub(super) start: u64,
}

/// `PF_KTHREAD` in a `stat` line's flags.
const PF_KTHREAD: u64 = 0x0020_0000;

pub(super) fn parse_stat(pid: i32, text: &str) -> Option<Stat> {
    // `pid (comm) state ppid pgrp ...`; comm may contain spaces and parentheses.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        pid,
        zombie: matches!(*f.first()?, "Z" | "X"),
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        kernel: f.get(6)?.parse::<u64>().ok()? & PF_KTHREAD != 0,
        start: f.get(19)?.parse().ok()?,
    })
}

pub(super) fn stat(pid: i32) -> Option<Stat> {
    // A stat line is a few hundred bytes; the fields read here come in its first 300.
    let mut buf = [0u8; 2048];
    let n = read_small(format_args!("/proc/{pid}/stat"), &mut buf)?;
    parse_stat(pid, std::str::from_utf8(&buf[..n]).ok()?)
}

/// Read a small `/proc` file into `buf` (what fits): open, one read (two when the first
/// stops short of a newline), close. `fs::read_to_string` sizes its buffer from the file's
/// size, which `/proc` reports as 0: it asked for 32 bytes, then 64, 128, 256... six
/// system calls for one `stat` line, for every process of every full scan.
pub(super) fn read_small(path: std::fmt::Arguments<'_>, buf: &mut [u8]) -> Option<usize> {
    use std::io::Read;
    let mut f = std::fs::File::open(path.to_string()).ok()?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => {
                n += k;
                if buf[n - 1] == b'\n' {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(n)
}

pub(super) fn all() -> Vec<Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// Whether the kernel lists each thread's children (`CONFIG_PROC_CHILDREN`).
pub(super) fn children_files() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| std::path::Path::new("/proc/thread-self/children").exists())
}

/// The children of every thread of `pid` (empty if it is gone).
pub(super) fn children_of(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in tasks.flatten() {
        // A list of pids, each followed by a space (no newline at the end).
        let mut buf = [0u8; 4096];
        let path = t.path().join("children");
        let Some(n) = read_small(format_args!("{}", path.display()), &mut buf) else {
            continue;
        };
        if n == buf.len() {
            // A thread with hundreds of children: read it all.
            if let Ok(list) = std::fs::read_to_string(&path) {
                out.extend(
                    list.split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
            continue;
        }
        out.extend(
            std::str::from_utf8(&buf[..n])
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    out
}

/// What a process's environment says of the tree marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Marker {
    /// It carries this one (`NAME=value`).
    Has(Arc<[u8]>),
    /// It carries none, or it is gone.
    No,
    /// Its environment reads empty. A process in the middle of an `exec` shows none until
    /// the kernel has laid out the new one: no answer yet, ask again.
    NotYet,
}

/// The tree marker in `pid`'s environment, read now.
pub(super) fn read_marker(pid: i32) -> Marker {
    let Some(env) = read_environ(pid) else {
        return Marker::No;
    };
    if env.is_empty() {
        return Marker::NotYet;
    }
    let prefix = format!("{}=", crate::supervisor::os::TREE_MARKER_VAR).into_bytes();
    env.split(|&b| b == 0)
        .find(|kv| kv.starts_with(&prefix))
        .map_or(Marker::No, |kv| Marker::Has(Arc::from(kv)))
}

/// `pid`'s environment, whole, in one read; `None` if it is gone (or not ours to read).
///
/// One read because the kernel holds the process's memory for the length of one read only:
/// read in pieces (as `fs::read` does, 32 bytes, then 64...), a process that `exec`s in
/// between yields the first pieces of its old environment and then an end, and a marker
/// further on was not found. That missed leftovers of clean exits under load.
fn read_environ(pid: i32) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(format!("/proc/{pid}/environ")).ok()?;
    // Most environments are a few KiB; the kernel allows up to a quarter of the stack limit.
    let mut size = 64 << 10;
    loop {
        let mut buf = vec![0u8; size];
        let n = loop {
            match file.read_at(&mut buf, 0) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                r => break r.ok()?,
            }
        };
        if n < size || size >= 64 << 20 {
            buf.truncate(n);
            return Some(buf);
        }
        size *= 4;
    }
}

/// The tree marker a process carries, read from its environment once per process (pid and
/// start time) and remembered for every tree of this host: a deep scan then reads only the
/// environments of processes it has not seen before. (A process keeps the answer across an
/// `exec`: one that had the marker was a descendant, and stays one.) An empty environment
/// is remembered only when `settle` says to stop asking: until then it may be an `exec`
/// half done, and remembering it would lose that process for good.
fn marker_of(s: &Stat, settle: bool) -> Marker {
    type Cache = Mutex<HashMap<(i32, u64), Option<Arc<[u8]>>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    if s.kernel {
        return Marker::No;
    }
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (s.pid, s.start);
    let known = |m: Option<Arc<[u8]>>| m.map_or(Marker::No, Marker::Has);
    if let Some(m) = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
    {
        return known(m.clone());
    }
    let marker = match read_marker(s.pid) {
        Marker::NotYet if !settle && !s.zombie => return Marker::NotYet,
        Marker::Has(m) => Some(m),
        Marker::No | Marker::NotYet => None,
    };
    let mut c = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if c.len() > 65_536 {
        // Forget processes that are gone (their pids may come back with other start times).
        c.retain(|(pid, start), _| stat(*pid).is_some_and(|s| s.start == *start));
    }
    c.insert(key, marker.clone());
    known(marker)
}

/// Whether `s` carries the marker `needle` (`NAME=value`); `None`: no answer yet
/// ([`Marker::NotYet`]).
pub(super) fn has_marker(s: &Stat, needle: &[u8], settle: bool) -> Option<bool> {
    match marker_of(s, settle) {
        Marker::Has(m) => Some(&*m == needle),
        Marker::No => Some(false),
        Marker::NotYet => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comm_with_parens() {
        let s = parse_stat(
            7,
            "7 (a (b) c) S 3 7 7 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 0 0",
        )
        .unwrap();
        assert_eq!(s.ppid, 3);
        assert_eq!(s.pgrp, 7);
        assert_eq!(s.start, 12345);
        assert!(!s.zombie);
        assert!(!s.kernel);
        let kthreadd = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0";
        assert!(parse_stat(2, kthreadd).unwrap().kernel);
        assert!(parse_stat(1, "garbage").is_none());
    }

    #[test]
    fn finds_itself() {
        let me = stat(std::process::id() as i32).unwrap();
        assert!(!me.kernel);
    }

    /// A marked process is found; an empty environment (what a process in the middle of an
    /// `exec` shows) is no answer, and is remembered only once the caller settles for it.
    #[test]
    fn an_empty_environment_is_asked_again_until_settled() {
        let var = crate::supervisor::os::TREE_MARKER_VAR;
        let spawn = |env: &[(&str, &str)]| {
            let mut cmd = std::process::Command::new("sleep");
            cmd.arg("30").env_clear().envs(env.iter().copied());
            cmd.spawn().unwrap()
        };
        let mut marked = spawn(&[(var, "7.1")]);
        let mut bare = spawn(&[]);
        let needle = format!("{var}=7.1").into_bytes();
        let (m, b) = (marked.id() as i32, bare.id() as i32);
        // The child's `exec` may still be laying out its environment when `spawn` returns.
        let reads_marked = |pid: i32| {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while std::time::Instant::now() < until {
                if read_marker(pid) == Marker::Has(needle.as_slice().into()) {
                    return true;
                }
                std::thread::yield_now();
            }
            false
        };
        assert!(
            reads_marked(m),
            "the marked child's environment never read as given"
        );
        assert_eq!(read_marker(b), Marker::NotYet);
        let (ms, bs) = (stat(m).unwrap(), stat(b).unwrap());
        assert_eq!(has_marker(&ms, &needle, false), Some(true));
        assert_eq!(has_marker(&ms, b"OTHER=1", false), Some(false));
        assert_eq!(has_marker(&bs, &needle, false), None);
        assert_eq!(has_marker(&bs, &needle, false), None, "not remembered");
        assert_eq!(has_marker(&bs, &needle, true), Some(false));
        assert_eq!(has_marker(&bs, &needle, false), Some(false), "remembered");
        // Past the first read's 64 KiB: still read whole. (One string may be 128 KiB.)
        let big = "x".repeat(100 << 10);
        let mut large = spawn(&[("AAA1", &big), ("AAA2", &big), ("AAA3", &big), (var, "7.1")]);
        let l = large.id() as i32;
        assert!(
            reads_marked(l),
            "the marker after 300 KiB of environment was not read"
        );
        for c in [&mut marked, &mut bare, &mut large] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

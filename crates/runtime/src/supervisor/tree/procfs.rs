//! Reading `/proc`: a process's `stat` line (parent, group, start time, zombie or not), its
//! children, and the tree marker in its environment.

use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Clone, Copy)]
pub(super) struct Stat {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) pgrp: i32,
    pub(super) zombie: bool,
    pub(super) start: u64,
}

pub(super) fn parse_stat(pid: i32, text: &str) -> Option<Stat> {
    // `pid (comm) state ppid pgrp ...`; comm may contain spaces and parentheses.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        pid,
        zombie: matches!(*f.first()?, "Z" | "X"),
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
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

/// The tree marker a process carries (`NAME=value`), read from its environment once per
/// process (pid and start time) and remembered for every tree of this host: a deep scan
/// then reads only the environments of processes it has not seen before. (A process keeps
/// the answer across an `exec`: one that had the marker was a descendant, and stays one.)
fn marker_of(s: &Stat) -> Option<std::sync::Arc<[u8]>> {
    use std::sync::{Arc, OnceLock};
    type Cache = Mutex<HashMap<(i32, u64), Option<Arc<[u8]>>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (s.pid, s.start);
    if let Some(m) = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
    {
        return m.clone();
    }
    let prefix = format!("{}=", super::proc::TREE_MARKER_VAR).into_bytes();
    let marker: Option<Arc<[u8]>> = std::fs::read(format!("/proc/{}/environ", s.pid))
        .ok()
        .and_then(|env| {
            env.split(|&b| b == 0)
                .find(|kv| kv.starts_with(&prefix))
                .map(Arc::from)
        });
    let mut c = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if c.len() > 65_536 {
        // Forget processes that are gone (their pids may come back with other start times).
        c.retain(|(pid, start), _| stat(*pid).is_some_and(|s| s.start == *start));
    }
    c.insert(key, marker.clone());
    marker
}

pub(super) fn has_marker(s: &Stat, needle: &[u8]) -> bool {
    marker_of(s).is_some_and(|m| &*m == needle)
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
        assert!(parse_stat(1, "garbage").is_none());
    }

    #[test]
    fn finds_itself() {
        assert!(stat(std::process::id() as i32).is_some());
    }
}

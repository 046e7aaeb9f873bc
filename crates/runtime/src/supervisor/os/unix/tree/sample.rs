//! Reading what the tree's processes are doing ([`read`]): for the child and each known
//! descendant, one `/proc/<pid>/stat` (state, parent, group, CPU time with the children it
//! waited for, resident memory, start), its command line, and, for the processes a tool call
//! started, their TCP connections and the bytes moved on them ([`super::sockets`]). A process
//! is identified by pid **and** start: one whose pid now names another process is left out.

use watchdog_core::evidence::{ProcFacts, ProcState, TreeSample};
use watchdog_host::tree::command_line;

use super::procfs::read_small;
use super::sockets::TcpReader;
use crate::supervisor::os::Proc;
use crate::supervisor::os::Sockets;

/// What one `/proc/<pid>/stat` line says that a sample keeps.
#[derive(Debug, Clone, PartialEq)]
struct Full {
    comm: String,
    state: char,
    ppid: u32,
    pgid: u32,
    /// utime + stime + cutime + cstime, in clock ticks.
    ticks: u64,
    start: u64,
    /// Resident pages.
    rss_pages: u64,
}

fn parse_full(text: &str) -> Option<Full> {
    // `pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    // utime stime cutime cstime priority nice threads itrealvalue starttime vsize rss ...`;
    // comm may hold spaces and parentheses: the last `)` ends it.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    let f: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    let ticks = [11, 12, 13, 14]
        .iter()
        .try_fold(0u64, |a, &i| n(i).map(|v| a.saturating_add(v)))?;
    Some(Full {
        comm,
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgid: f.get(2)?.parse().ok()?,
        ticks,
        start: n(19)?,
        rss_pages: f.get(21)?.parse::<i64>().ok()?.max(0) as u64,
    })
}

fn full(pid: i32) -> Option<Full> {
    let mut buf = [0u8; 2048];
    let n = read_small(format_args!("/proc/{pid}/stat"), &mut buf)?;
    parse_full(std::str::from_utf8(&buf[..n]).ok()?)
}

/// The command line of `pid` (`[comm]` when it has none: a zombie, a kernel thread).
fn cmdline(pid: i32, comm: &str) -> String {
    let mut buf = [0u8; 4096];
    let n = read_small(format_args!("/proc/{pid}/cmdline"), &mut buf).unwrap_or(0);
    let argv: Vec<&[u8]> = buf[..n]
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .collect();
    if argv.is_empty() {
        format!("[{comm}]")
    } else {
        command_line(&argv)
    }
}

/// The machine's clock: ticks a second, bytes a page, and ticks since boot now.
struct Clock {
    hz: u64,
    page: u64,
    now_ticks: u64,
}

fn clock() -> Result<Clock, String> {
    let mut buf = [0u8; 128];
    let n = read_small(format_args!("/proc/uptime"), &mut buf)
        .ok_or_else(|| "/proc is not readable (no /proc/uptime)".to_owned())?;
    let up: f64 = std::str::from_utf8(&buf[..n])
        .ok()
        .and_then(|t| t.split_whitespace().next())
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| "/proc/uptime is not readable".to_owned())?;
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Ok(Clock {
        hz,
        page: rustix::param::page_size() as u64,
        now_ticks: (up * hz as f64) as u64,
    })
}

/// Read the tree: `root` (the child, as the tree identified it when it began; `None`:
/// it could not) and `procs` (its live descendants, as the tree knows them). `sockets`:
/// whose TCP connections to read.
pub(crate) fn read(root: Option<Proc>, procs: &[Proc], sockets: Sockets) -> TreeSample {
    let clk = match clock() {
        Ok(c) => c,
        Err(why) => return TreeSample::unavailable(why),
    };
    let Some(root) = root else {
        return TreeSample::unavailable("the child was gone before its tree could be read");
    };
    let ms = |ticks: u64| ticks.saturating_mul(1000) / clk.hz;
    let mut tcp = TcpReader::default();
    let mut out = Vec::with_capacity(procs.len() + 1);
    for p in std::iter::once(&root).chain(procs) {
        let Some(f) = full(p.pid) else { continue };
        if f.start != p.start || out.iter().any(|o: &ProcFacts| o.pid == p.pid as u32) {
            continue; // the pid names another process now, or it was listed twice
        }
        let age_ms = ms(clk.now_ticks.saturating_sub(f.start));
        let (mut conns, mut net) = (0, None);
        if sockets.0.is_some_and(|max| age_ms <= max) && p.pid != root.pid {
            (conns, net) = tcp.of_process(p.pid);
        }
        out.push(ProcFacts {
            pid: p.pid as u32,
            start: f.start,
            ppid: f.ppid,
            pgid: f.pgid,
            cmd: cmdline(p.pid, &f.comm),
            state: ProcState::from_letter(f.state),
            cpu_ms: ms(f.ticks),
            rss: f.rss_pages.saturating_mul(clk.page),
            age_ms,
            tcp: conns,
            net,
        });
    }
    TreeSample {
        root: root.pid as u32,
        procs: out,
        fault: None,
    }
}

/// `pid`'s start as the tree identifies it (`None`: gone).
pub(crate) fn start_of(pid: i32) -> Option<u64> {
    full(pid).map(|f| f.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_field_of_a_stat_line() {
        let line = "42 (a (b) c) S 7 42 42 0 -1 4194560 100 0 0 0 250 50 30 20 20 0 3 0 \
                    987654 123456789 2560 18446744073709551615";
        let f = parse_full(line).unwrap();
        assert_eq!(
            f,
            Full {
                comm: "a (b) c".into(),
                state: 'S',
                ppid: 7,
                pgid: 42,
                ticks: 350,
                start: 987_654,
                rss_pages: 2560,
            }
        );
        assert!(parse_full("42 (x) S 1").is_none());
        assert!(parse_full("garbage").is_none());
    }

    /// This process, read as a tree of one: its command, its memory, its CPU; a pid with
    /// another start is left out.
    #[test]
    fn reads_a_live_process_and_never_a_reused_pid() {
        let me = std::process::id() as i32;
        let start = start_of(me).unwrap();
        let s = read(Some(Proc { pid: me, start }), &[], Sockets(None));
        assert!(s.fault.is_none());
        let p = &s.procs[0];
        assert_eq!((p.pid, p.start), (me as u32, start));
        assert!(p.rss > 0 && !p.cmd.is_empty(), "{p:?}");
        let other = read(
            Some(Proc {
                pid: me,
                start: start + 1,
            }),
            &[],
            Sockets(None),
        );
        assert!(other.procs.is_empty(), "{other:?}");
    }

    /// A process that exits between two samples leaves its CPU to the parent that waited
    /// for it: a tool's work done by short-lived processes still shows.
    #[test]
    fn the_cpu_of_a_reaped_child_is_its_parent_s() {
        let mut sh = std::process::Command::new("sh")
            // 0.3 s of its own CPU, however loaded the machine (not 0.3 s of wall time).
            .args([
                "-c",
                "python3 -c 'import time\nwhile time.process_time() < 0.3: pass'; exec sleep 30",
            ])
            .spawn()
            .unwrap();
        let pid = sh.id() as i32;
        // Until the burner is gone and `sh` became `sleep` (the same process).
        let me = loop {
            let f = full(pid).unwrap();
            if f.comm == "sleep" {
                break Proc {
                    pid,
                    start: f.start,
                };
            }
            std::thread::yield_now();
        };
        let s = read(Some(me), &[], Sockets(None));
        let _ = sh.kill();
        let _ = sh.wait();
        assert!(s.procs[0].cpu_ms >= 250, "{:?}", s.procs[0]);
    }
}

//! The process tree in what `run` and `replay` report: what the rule read at a kill
//! (`kill.evidence`), the receipt of the tree a kill or a cleanup stopped (`kill.tree`,
//! `leftovers_tree`), what the run's samples said (`tree`: the peak memory), and the clause a
//! kill's stderr line adds, naming the process that tells most (`Bash tool: \`git push\` (pid
//! 4121) asleep 29m, 0 CPU`).
//!
//! What a record may say of a command line is decided here too ([`CommandLines`]): every
//! command line shown goes through the one redaction rule ([`watchdog_host::redact`]; a
//! capture written before it is redacted when shown), and with `--no-command-lines` the run's
//! records keep each process's program name only.

use std::borrow::Cow;
use std::time::Duration;

use serde_json::{json, Value};
use watchdog_core::config::{format_bytes, HumanDuration};
use watchdog_core::evidence::{ProcFacts, Receipt, TreeEvidence, TreeFacts, TreeSample};
use watchdog_core::{Event, Kill, KillKind, RunRecord};
use watchdog_host::redact;

use crate::millis::ms;

/// What a run's records (summary, capture, telemetry, stderr) may say of a command line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CommandLines {
    /// The command line, with what looks like a secret redacted and at most 200 bytes (the
    /// default).
    #[default]
    Redacted,
    /// The program's name only (`--no-command-lines`).
    ProgramOnly,
}

impl CommandLines {
    /// `ProgramOnly` when `--no-command-lines` is on.
    pub fn from_switch(no_command_lines: bool) -> Self {
        if no_command_lines {
            CommandLines::ProgramOnly
        } else {
            CommandLines::Redacted
        }
    }

    /// A process's command line as a record keeps it: redacted, or its program's name
    /// (`bash`, not `/usr/bin/bash -c …`; a `[comm]` stays).
    pub fn show(self, cmd: &str) -> Cow<'_, str> {
        match self {
            CommandLines::Redacted => redact::text(cmd),
            CommandLines::ProgramOnly if cmd.starts_with('[') => Cow::Borrowed(cmd),
            CommandLines::ProgramOnly => {
                let program = cmd.split(' ').next().unwrap_or_default();
                Cow::Borrowed(program.rsplit('/').next().unwrap_or(program))
            }
        }
    }

    /// The command a run ran, as its summary keeps it (`command`).
    pub fn argv(self, argv: &[String]) -> Vec<String> {
        match self {
            CommandLines::Redacted => redact::args(argv),
            CommandLines::ProgramOnly => argv
                .first()
                .map(|p| vec![p.rsplit('/').next().unwrap_or(p).to_owned()])
                .unwrap_or_default(),
        }
    }

    fn proc(self, p: &mut ProcFacts) {
        let shown = self.show(&p.cmd);
        if shown != p.cmd.as_str() {
            let shown = shown.into_owned();
            p.cmd = shown;
        }
    }

    /// A sample of the tree as a record keeps it.
    pub fn sample(self, s: &mut TreeSample) {
        s.procs.iter_mut().for_each(|p| self.proc(p));
    }

    /// A kill as a record keeps it (the process its evidence names).
    pub fn kill(self, k: &mut Kill) {
        if let Some(p) = k.tree.as_mut().and_then(|e| e.named.as_mut()) {
            self.proc(p);
        }
    }

    /// An event as a record keeps it (a kill's evidence).
    pub fn event(self, ev: &mut Event) {
        if let Event::Killed(k) = ev {
            self.kill(k);
        }
    }

    /// A run's record as a record keeps it: its kill and its receipt.
    pub fn record(self, r: &mut RunRecord) {
        if let Some(k) = r.kill.as_mut() {
            self.kill(k);
        }
        if let Some(receipt) = r.receipt.as_mut() {
            self.sample(&mut receipt.tree);
        }
    }
}

/// One process as JSON: `pid`, `ppid`, `pgid`, `command`, `state`, `cpu_ms`, `rss_bytes`,
/// `age_ms`, `tcp`, `net_bytes`.
pub fn proc_json(p: &ProcFacts) -> Value {
    json!({
        "pid": p.pid,
        "ppid": p.ppid,
        "pgid": p.pgid,
        "command": redact::text(&p.cmd),
        "state": p.state.as_str(),
        "cpu_ms": p.cpu_ms,
        "rss_bytes": p.rss,
        "age_ms": p.age_ms,
        "tcp": p.tcp,
        "net_bytes": p.net,
    })
}

/// What the rule read of the tree at a kill (`kill.evidence`).
pub fn evidence_json(e: &TreeEvidence) -> Value {
    json!({
        "tool": e.tool.as_ref().map(|t| json!({"name": t.name, "outstanding_ms": ms(t.outstanding)})),
        "named": e.named.as_ref().map(proc_json),
        "busy": e.busy,
        "held_ms": ms(e.held),
        "capped": e.capped,
        "rss_bytes": e.rss,
        "peak_rss_bytes": e.peak_rss,
        "max_rss_bytes": e.max_rss,
        "over_rss_ms": e.over_rss.map(ms),
        "sample_age_ms": e.sample_age.map(ms),
        "unavailable": e.unavailable,
    })
}

/// What the run's samples said (`tree`): how many, how many failed and the last fault, how
/// many found the tool busy, the peak memory, and in one word whether the rules had the
/// tree's evidence (`sampled`), tried and could not read it (`unavailable`), or never needed
/// it (`none`: no sample was due).
pub fn facts_json(f: &TreeFacts) -> Value {
    let evidence = match (f.samples, f.failed) {
        (0, 0) => "none",
        (0, _) => "unavailable",
        _ => "sampled",
    };
    json!({
        "evidence": evidence,
        "samples": f.samples,
        "failed": f.failed,
        "fault": f.fault,
        "busy_samples": f.busy_samples,
        "peak_rss_bytes": f.peak_rss,
    })
}

/// The receipt as JSON: each process as it stood and what the ladder did to it (`sent`,
/// `ended`); `tool` marks the processes of the tool call the kill found outstanding, and
/// `named_pid` is the one the kill named (matched by pid and start).
pub fn receipt_json(r: &Receipt, kill: Option<&Kill>) -> Value {
    let evidence = kill.and_then(|k| k.tree.as_deref());
    // The call was outstanding this long when the receipt's tree was read.
    let outstanding = evidence.and_then(|e| e.tool.as_ref()).map(|t| {
        let kill_ms = kill.map_or(0, |k| ms(k.elapsed));
        ms(t.outstanding) + r.at_ms.saturating_sub(kill_ms)
    });
    let named = evidence
        .and_then(|e| e.named.as_ref())
        .filter(|n| {
            r.tree
                .procs
                .iter()
                .any(|p| p.pid == n.pid && p.start == n.start)
        })
        .map(|n| n.pid);
    let processes: Vec<Value> = r
        .processes()
        .map(|(p, a)| {
            let mut v = proc_json(p);
            v["tool"] = json!(outstanding.is_some_and(|o| r.tree.in_tool(p, o)));
            v["sent"] = json!(a.map(|a| a.sent.clone()).unwrap_or_default());
            v["ended"] = json!(a.and_then(|a| a.ended));
            v
        })
        .collect();
    json!({
        "cause": r.cause,
        "at_ms": r.at_ms,
        "fault": r.tree.fault,
        "total_rss_bytes": r.tree.total_rss(),
        "named_pid": named,
        "processes": processes,
    })
}

/// What a `memory` kill says first: the tree's memory against the guard, and for how long.
pub fn memory_detail(kill: &Kill) -> String {
    match kill.tree.as_deref().map(|e| (e.rss, e.max_rss, e.over_rss)) {
        Some((Some(rss), Some(max), over)) => format!(
            "the process tree used {}, over --max-rss {} for {}",
            format_bytes(rss),
            format_bytes(max),
            HumanDuration(over.unwrap_or_default())
        ),
        _ => "the process tree's memory stayed above --max-rss".to_owned(),
    }
}

/// A duration for a reader, as exact as it needs to be: whole seconds from one second on
/// (`29m`, `1h56m40s`), milliseconds under it, `0` under one clock tick (10 ms). A sample's
/// ages and CPU times are read in ticks: more digits would only say when it was read.
fn coarse(ms: u64) -> String {
    match ms {
        0..=9 => "0".into(),
        10..=999 => format!("{ms}ms"),
        _ => HumanDuration(Duration::from_secs((ms + 500) / 1000)).to_string(),
    }
}

/// `` `git push` (pid 4121) asleep 29m, 0 CPU ``.
fn proc_clause(p: &ProcFacts) -> String {
    format!(
        "`{}` (pid {}) {} {}, {} CPU",
        redact::text(&p.cmd),
        p.pid,
        p.state.as_str(),
        coarse(p.age_ms),
        coarse(p.cpu_ms)
    )
}

/// What a kill's stderr line adds from the tree (empty without evidence): for `memory` the
/// tree's memory against the guard and the largest process; for a busy tool held to the cap
/// how long it was held; else the process the kill names, under its tool's name; or that
/// the tree could not be read.
pub fn kill_clause(kill: &Kill) -> String {
    let Some(e) = kill.tree.as_deref() else {
        return String::new();
    };
    if let Some(why) = &e.unavailable {
        return format!("; process evidence unavailable ({why}): the stream alone decided");
    }
    let named = e.named.as_ref().map(proc_clause);
    let tool = e.tool.as_ref().map(|t| format!("{} tool: ", t.name));
    match kill.kind {
        KillKind::Memory => e.named.as_ref().map_or(String::new(), |p| {
            format!(
                "; largest: `{}` (pid {}) {}",
                redact::text(&p.cmd),
                p.pid,
                format_bytes(p.rss)
            )
        }),
        KillKind::NoProgress if e.capped => format!(
            "; its tool's processes were busy, which held the kill {} past --no-progress, up \
             to --busy-cap{}",
            HumanDuration(e.held),
            named.map_or(String::new(), |n| format!(
                ": {}{n}",
                tool.unwrap_or_default()
            ))
        ),
        KillKind::NoProgress if !e.held.is_zero() => format!(
            "; its tool's processes were busy until {} ago (held {}){}",
            HumanDuration(kill.since_progress.saturating_sub(e.held)),
            HumanDuration(e.held),
            named.map_or(String::new(), |n| format!(
                ": {}{n}",
                tool.unwrap_or_default()
            ))
        ),
        _ => named.map_or(String::new(), |n| {
            format!("; {}{n}", tool.unwrap_or_default())
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use watchdog_core::evidence::{ProcState, ToolCall};
    use watchdog_core::{Limits, Registry, SessionConfig};

    fn kill(kind: KillKind, tree: TreeEvidence) -> Kill {
        let at = Instant::now();
        let id = Registry::new(Limits::default()).register(at, SessionConfig::default());
        let mut k = Kill::new(id, kind, at);
        k.elapsed = Duration::from_secs(1860);
        k.since_progress = Duration::from_secs(1860);
        k.since_keepalive = Duration::from_secs(10);
        k.since_tool = Duration::from_secs(1860);
        k.tree = Some(Box::new(tree));
        k
    }

    fn git_push() -> ProcFacts {
        ProcFacts {
            pid: 4121,
            start: 9,
            ppid: 4100,
            pgid: 4100,
            cmd: "git push".into(),
            state: ProcState::Asleep,
            cpu_ms: 4,
            rss: 12 << 20,
            age_ms: 29 * 60_000,
            tcp: 1,
            net: Some(0),
        }
    }

    fn evidence() -> TreeEvidence {
        let mut e = TreeEvidence::default();
        e.tool = Some(ToolCall {
            name: "Bash".into(),
            outstanding: Duration::from_secs(1800),
        });
        e.named = Some(git_push());
        e.rss = Some(300 << 20);
        e.peak_rss = Some(400 << 20);
        e.sample_age = Some(Duration::from_millis(400));
        e
    }

    #[test]
    fn durations_are_as_exact_as_a_reader_needs() {
        assert_eq!(coarse(4), "0");
        assert_eq!(coarse(250), "250ms");
        assert_eq!(coarse(2_400), "2s");
        assert_eq!(coarse(2_600), "3s");
        assert_eq!(coarse(29 * 60_000 + 300), "29m");
    }

    #[test]
    fn a_hung_tool_is_named_asleep() {
        let k = kill(KillKind::NoProgress, evidence());
        assert_eq!(
            kill_clause(&k),
            "; Bash tool: `git push` (pid 4121) asleep 29m, 0 CPU"
        );
    }

    #[test]
    fn the_memory_guard_names_the_largest_process() {
        let mut e = evidence();
        e.max_rss = Some(1 << 30);
        e.rss = Some(3 << 30);
        e.over_rss = Some(Duration::from_secs(5));
        let mut hog = git_push();
        hog.cmd = "python hog.py".into();
        hog.rss = 5 << 29;
        e.named = Some(hog);
        let k = kill(KillKind::Memory, e);
        assert_eq!(
            memory_detail(&k) + &kill_clause(&k),
            "the process tree used 3GiB, over --max-rss 1GiB for 5s; largest: `python hog.py` \
             (pid 4121) 2.5GiB"
        );
    }

    #[test]
    fn a_capped_hold_and_missing_evidence_are_said() {
        let mut e = evidence();
        e.capped = true;
        e.busy = true;
        e.held = Duration::from_secs(5400);
        let mut cc = git_push();
        cc.cmd = "cargo build".into();
        cc.state = ProcState::Running;
        cc.cpu_ms = 7_000_000;
        e.named = Some(cc);
        let k = kill(KillKind::NoProgress, e);
        assert_eq!(
            kill_clause(&k),
            "; its tool's processes were busy, which held the kill 1h30m past --no-progress, up \
             to --busy-cap: Bash tool: `cargo build` (pid 4121) running 29m, 1h56m40s CPU"
        );
        let mut e = evidence();
        e.unavailable = Some("/proc is not mounted".into());
        let k = kill(KillKind::NoProgress, e);
        assert!(kill_clause(&k).contains("process evidence unavailable (/proc is not mounted)"));
    }
}

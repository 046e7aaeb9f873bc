//! CPU time of the watchdog itself and of the children it waited for, for the summary: what
//! supervising costs next to what the supervised command costs.
//!
//! Read from `/proc/self/stat` (Linux): `utime + stime` for this process (all its threads)
//! and `cutime + cstime` for its waited-for children and their waited-for descendants (the
//! supervised command and, through it, the tools it ran and waited for). The kernel counts in
//! clock ticks of 10 ms (`USER_HZ` is 100 for everything `/proc` reports), so figures are
//! multiples of 10 ms. `std` has no `getrusage`, and this crate uses no `unsafe` to call it.
//! On other systems the summary's `cpu` is `null`.

use serde_json::{json, Value};

/// CPU time in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuUsage {
    /// This process, user + system.
    pub own_ms: u64,
    /// Waited-for children and their waited-for descendants, user + system.
    pub children_ms: u64,
}

/// Parse the fields after the command name of a `/proc/<pid>/stat` line.
fn parse(stat: &str) -> Option<CpuUsage> {
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Field n (1-based, as in proc(5)) is f[n - 3]: state is field 3.
    let tick = |n: usize| -> Option<u64> { f.get(n - 3)?.parse().ok() };
    Some(CpuUsage {
        own_ms: (tick(14)? + tick(15)?) * 10,
        children_ms: (tick(16)? + tick(17)?) * 10,
    })
}

/// This process's CPU usage so far, if the system tells it.
pub fn usage() -> Option<CpuUsage> {
    parse(&crate::os::own_stat()?)
}

/// This process's CPU time so far in microseconds, all threads (those that ended too), from
/// the process CPU-time clock: not rounded to 10 ms ticks.
pub fn own_us() -> Option<u64> {
    crate::os::own_cpu_us()
}

/// `{"watchdog_ms", "watchdog_us", "child_ms", "ratio", "resolution_ms": 10}`, or `null`.
/// `watchdog_us` is the watchdog's own time to the microsecond (`watchdog_ms` and `child_ms`
/// are in 10 ms ticks): a watchdog that costs a few milliseconds next to a session's second
/// of CPU shows as 0 or 10 ms in ticks.
pub fn usage_json() -> Value {
    match usage() {
        None => Value::Null,
        Some(u) => json!({
            "watchdog_ms": u.own_ms,
            "watchdog_us": own_us(),
            "child_ms": u.children_ms,
            "ratio": (u.children_ms > 0).then(|| u.own_ms as f64 / u.children_ms as f64),
            "resolution_ms": 10,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_four_cpu_fields() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 120 45 20 0 1 0 5 0 0";
        assert_eq!(
            parse(stat),
            Some(CpuUsage {
                own_ms: 100,
                children_ms: 1650
            })
        );
        assert_eq!(parse("garbage"), None);
        assert_eq!(parse("1 (x) S 1"), None);
    }

    /// A child that burns CPU shows up under children once waited for, not under us.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_waited_child_counts_as_the_child_s() {
        let before = usage().expect("/proc/self/stat");
        let st = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(st.success());
        let after = usage().unwrap();
        assert!(
            after.children_ms >= before.children_ms + 10,
            "{before:?} → {after:?}"
        );
    }
}

//! How long a healthy session may stay quiet under a policy ([`Limits::quiet`]): what follows
//! from the deadlines for a host that must not give up on a session the watchdog still lets
//! run (an orchestrator's heartbeat timeout), every hold included.

use std::time::Duration;

use super::Limits;

/// How long a healthy session may stay quiet under a policy ([`Limits::quiet`]). Every field
/// is counted from the last line (for silence) or the last progress (for no progress), and is
/// the latest the watchdog's kill can come; the kill itself then takes the host's grace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Quiet {
    /// The longest a session that holds nothing goes quiet before the watchdog ends it:
    /// `max(startup, idle × extend_factor, no_progress)`. Past it (plus the kill's grace) a
    /// session with no hold has been ended, so a host that has heard nothing of it for longer
    /// may take its worker for dead.
    pub unheld: Duration,
    /// While a tool call is outstanding and its processes are busy: no progress for
    /// `max(no_progress, busy_cap)` (the tool's own keep-alives keep the idle clock).
    pub busy_tool: Duration,
    /// An announced API back-off (`system/api_retry`): Claude Code prints nothing while it
    /// waits, for at most `max_backoff` after the storm's first retry, and both clocks start
    /// afresh at its end. Silence: `max_backoff` plus the patience; no progress: a storm that
    /// begins just before the no-progress kill, `no_progress + max_backoff + no_progress`.
    pub backoff: Duration,
    /// While an MCP tool call is outstanding: no progress until where Claude Code gives up on
    /// it plus the margin (the longest of the servers'), `None` when no server has a floor.
    pub mcp_call: Option<Duration>,
    /// The longest of all of the above: `None`, unbounded, when a human wait may pause the
    /// clocks (a permission prompt waits for its answer as long as it takes).
    pub longest: Option<Duration>,
}

impl Limits {
    /// How long a healthy session may stay quiet under this policy, every hold included
    /// ([`Quiet`]); `human_waits`: the session may ask its host (a permission prompt, a
    /// question), which pauses the clocks for as long as the answer takes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use watchdog_core::Limits;
    /// let min = |m: u64| Duration::from_secs(m * 60);
    /// let q = Limits::default().quiet(false);
    /// // max(startup 3m, idle 10m × 2, no_progress 30m)
    /// assert_eq!(q.unheld, min(30));
    /// // A busy tool holds the no-progress kill up to busy_cap (2h).
    /// assert_eq!(q.busy_tool, min(120));
    /// // A storm of announced back-offs: 30m + 2h + 30m.
    /// assert_eq!(q.backoff, min(180));
    /// assert_eq!(q.longest, Some(min(180)));
    /// assert_eq!(Limits::default().quiet(true).longest, None);
    /// ```
    pub fn quiet(&self, human_waits: bool) -> Quiet {
        let patience = self.extended_idle().max(self.idle());
        let no_progress = self.no_progress();
        let unheld = self.startup().max(patience).max(no_progress);
        let busy_tool = no_progress.max(self.busy_cap());
        let backoff = self.max_backoff().saturating_add(patience).max(
            no_progress
                .saturating_add(self.max_backoff())
                .saturating_add(no_progress),
        );
        let mcp = self.mcp();
        let mcp_call = std::iter::once(mcp.give_up())
            .chain(mcp.servers().iter().map(|(_, d)| *d))
            .flatten()
            .max()
            .map(|g| g.saturating_add(mcp.margin()).max(no_progress));
        let longest = unheld
            .max(busy_tool)
            .max(backoff)
            .max(mcp_call.unwrap_or_default());
        Quiet {
            unheld,
            busy_tool,
            backoff,
            mcp_call,
            longest: (!human_waits).then_some(longest),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::McpLimits;

    const fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn each_hold_is_its_own_bound_and_the_longest_wins() {
        let l = Limits::default()
            .with_startup(s(10))
            .unwrap()
            .with_idle(s(5))
            .unwrap()
            .with_extend_factor(3.0)
            .unwrap()
            .with_no_progress(s(8))
            .unwrap()
            .with_busy_cap(s(60))
            .unwrap()
            .with_max_backoff(s(20))
            .unwrap()
            .with_mcp(McpLimits::default().with_give_up(None).unwrap());
        let q = l.quiet(false);
        assert_eq!(q.unheld, s(15), "idle × extend_factor");
        assert_eq!(q.busy_tool, s(60));
        assert_eq!(q.backoff, s(36), "8 + 20 + 8 beats 20 + 15");
        assert_eq!(q.mcp_call, None, "no server has a floor");
        assert_eq!(q.longest, Some(s(60)));
        // A server with a floor: its give-up plus the margin.
        let mcp = McpLimits::default()
            .with_give_up(None)
            .unwrap()
            .with_server("db", Some(s(300)))
            .unwrap();
        let q = l.clone().with_mcp(mcp).quiet(false);
        assert_eq!(q.mcp_call, Some(s(330)));
        assert_eq!(q.longest, Some(s(330)));
        // busy_cap 0: a busy tool holds nothing.
        let q = l.with_busy_cap(Duration::ZERO).unwrap().quiet(false);
        assert_eq!(q.busy_tool, s(8));
    }
}

//! Claude Code's hooks while they run: a top-level `system/hook_started` until the
//! `system/hook_response` with its `hook_id`. Claude Code bounds a hook itself: it cancels one
//! that has not answered after its timeout (600 s by default for most events; measured on
//! 2.1.332: a `SessionStart` hook that never exits is cancelled 600.1 s after its
//! `hook_started`, and the session then runs as usual) and prints nothing meanwhile. So while a
//! hook runs, the idle kill comes no earlier than its start plus that default plus one
//! heartbeat tick ([`HOOK_FLOOR`]), as the no-progress kill waits for Claude Code's own
//! abort of an MCP call: an idle patience of 10 minutes (the default, unextended: after the
//! first write, a `SessionStart` hook runs again at a `compact` or a `resume`) would otherwise
//! kill 0.07 s before Claude Code's own recovery.

use std::time::Duration;

use super::{id_hash, Cold, Session, Side};
use crate::view::LineView;

/// At most this many running hooks are remembered per session.
const MAX_HOOKS: usize = 64;

/// How long after a hook's start the idle kill may come at the earliest: Claude Code's
/// default hook timeout (600 s) plus its 30 s heartbeat tick.
pub(crate) const HOOK_FLOOR: Duration = Duration::from_secs(630);

const HOOK_FLOOR_NS: u64 = HOOK_FLOOR.as_nanos() as u64;

/// A hook that runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunningHook {
    /// [`id_hash`] of its `hook_id`.
    pub hash: u64,
    /// When its `hook_started` came.
    pub started: u64,
}

impl Session {
    /// A top-level `system/hook_started` or `system/hook_response` (`subtype`) at `now`.
    pub(crate) fn read_hook(&mut self, c: &mut Cold, subtype: &str, view: &LineView<'_>, now: u64) {
        if view.parent_tool_use_id().is_some() {
            return;
        }
        let Some(id) = view.member("hook_id").and_then(|f| f.as_str()) else {
            return;
        };
        let h = id_hash(&id);
        match subtype {
            "hook_started" => {
                let w = c.waits_or_new();
                if w.hooks.len() < MAX_HOOKS && !w.hooks.iter().any(|k| k.hash == h) {
                    w.hooks.push(RunningHook {
                        hash: h,
                        started: now,
                    });
                }
                self.side.insert(Side::Waits);
            }
            "hook_response" => {
                if let Some(w) = c.waits_mut() {
                    w.hooks.retain(|k| k.hash != h);
                }
                self.sync_waits(c);
            }
            _ => {}
        }
    }

    /// The earliest instant the idle kill may come while hooks run (0: none runs).
    pub(crate) fn hook_floor(&self, c: &Cold) -> u64 {
        if !self.side.has(Side::Waits) {
            return 0;
        }
        c.waits()
            .and_then(|w| w.hooks.iter().map(|k| k.started).max())
            .map_or(0, |s| s.saturating_add(HOOK_FLOOR_NS))
    }
}

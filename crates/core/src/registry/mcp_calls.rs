//! MCP tool calls outstanding, from the lines: a `tool_use` of an `mcp__…` tool (or a heartbeat
//! naming one) begins a call, its `tool_result` ends it; while one is outstanding the
//! no-progress kill comes no earlier than its floor ([`McpLimits`]).

use crate::config::McpLimits;
use crate::session::{dur_ns, id_hash, Cold, PendingMcp, Session, Side, NEVER};
use crate::view::LineView;

use super::MAX_PENDING;

/// An MCP tool call began at `t` (a `tool_use`, or a heartbeat of a call not seen before).
pub(super) fn begin_mcp(
    s: &mut Session,
    c: &mut Cold,
    id: &str,
    tool: &str,
    t: u64,
    mcp: &McpLimits,
) {
    let hash = id_hash(id);
    let r = c.rare_or_new();
    let known = r.mcp_calls.iter().any(|m| m.hash == hash && &*m.id == id);
    if !known && r.mcp_calls.len() < MAX_PENDING {
        let floor = mcp
            .floor_for_tool(tool)
            .map_or(0, |d| t.saturating_add(dur_ns(d)));
        r.mcp_calls.push(PendingMcp {
            hash,
            id: id.into(),
            tool: tool.into(),
            started: t,
            floor,
        });
    }
    s.sync_mcp(r);
}

/// A `tool_result` for `id`: the MCP call of that id, if any, is over. Returns whether one
/// was removed.
pub(super) fn end_mcp(s: &mut Session, c: &mut Cold, id: &str) -> bool {
    let Some(r) = c.rare_mut() else {
        return false;
    };
    let h = id_hash(id);
    let Some(i) = r.mcp_calls.iter().position(|m| m.hash == h && &*m.id == id) else {
        return false;
    };
    r.mcp_calls.swap_remove(i);
    s.sync_mcp(r);
    true
}

/// A `tool_progress` heartbeat: one naming an MCP tool proves its call outstanding since
/// `elapsed_time_seconds` ago (`parent_tool_use_id` is the call's id; the line's own
/// `tool_use_id` is made up).
pub(super) fn read_heartbeat(
    s: &mut Session,
    c: &mut Cold,
    view: &LineView<'_>,
    mcp: &McpLimits,
    t: u64,
) {
    let Some(tool) = view.tool_name().filter(|n| crate::mcp::is_mcp_tool(n)) else {
        return;
    };
    let Some(id) = view.parent_tool_use_id() else {
        return;
    };
    if s.side.has(Side::Mcp) {
        if let Some(r) = c.rare_mut() {
            let h = id_hash(&id);
            if r.mcp_calls.iter().any(|m| m.hash == h && *m.id == *id) {
                return;
            }
        }
    }
    let elapsed = view.elapsed_time_seconds().map_or(0, |e| {
        let ns = e * 1e9;
        if ns >= u64::MAX as f64 {
            NEVER
        } else {
            ns as u64
        }
    });
    begin_mcp(s, c, &id, &tool, t.saturating_sub(elapsed), mcp);
}

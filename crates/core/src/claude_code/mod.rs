//! What Claude Code itself does, as far as the policy applies it (Claude Code 2.1.332; see
//! `testdata/mcp/README.md`).
//!
//! - [`mcp`]: the MCP rule: the heartbeat tick, where Claude Code gives up on a silent call
//!   ([`mcp::give_up`]), the variables and `--mcp-config` servers that move it
//!   ([`mcp::McpSetup`]), and the `mcp__<server>__<tool>` naming ([`mcp::mcp_tool_parts`]).
//!
//! How a child was started (its command line, which session it runs) is read by the host:
//! `watchdog_host::claude_code`.

pub mod mcp;

//! # watchdog-host
//!
//! Host-side helpers around [`watchdog_core`], the policy: what a host that supervises Claude
//! Code (the CLI, the runtime, the audit, the language bindings) records, replays, counts and
//! reads from how a child was started. The policy decides; these modules feed it and report it.
//!
//! - [`capture`]: the capture format (recordings of runs), read owned or in place, and split
//!   into lines from any reader in bounded memory ([`capture::lines`]).
//! - [`replay`]: a capture replayed in virtual time through the core's
//!   [`Registry`](watchdog_core::Registry), streaming (the one replay of the project).
//! - [`metrics`]: what a host counts as it delivers the registry's events (kills, ends,
//!   warnings, kill lateness), the snapshot, its one Prometheus rendering and the answer to a
//!   scrape ([`metrics::scrape`]).
//! - [`claude_code`]: how Claude Code was started ([`claude_code::Invocation`]: `{argv, env,
//!   cwd}`), which session it runs, the hook timeout. The MCP rule it implies is the policy's
//!   ([`watchdog_core::mcp`]).
//! - [`redact`]: what looks like a secret in a command line, redacted, inside a `bash -c`
//!   string too: the one rule for everything recorded of a command.
//! - [`options`]: the one table of user-facing options (name, flag, variable, kind, default,
//!   range, help) the command line is built from and the SDK helpers' policies are checked by,
//!   and [`ledger_url`], a shared ledger's URL as an option's value.
//! - [`sdk_run`]: one Agent SDK session as its host reads it, folded ([`sdk_run::SdkRun`]):
//!   progress, the interruption, the watchdog's kill, whether it is alive, how it ended. The
//!   loop of every SDK host (the Temporal helpers).
//! - [`dialect`]: which agent CLI a command line runs (Claude Code, OpenAI Codex, opencode),
//!   the host's first word on a session's [`Dialect`](watchdog_core::Dialect).
//! - [`tree`]: what a host reads of the child's process tree for the core's evidence: a
//!   process's command line, bounded and redacted ([`tree::command_line`]).
//! - [`warning_filter`]: show a known repeated warning once, count the rest (the SDK's warnings
//!   with a code, the child's stderr lines; behind the `tracing` feature, a `tracing` layer).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod capture;
pub mod claude_code;
pub mod dialect;
pub mod ledger_url;
pub mod metrics;
pub mod options;
pub mod redact;
pub mod replay;
pub mod sdk_run;
pub mod tree;
pub mod warning_filter;

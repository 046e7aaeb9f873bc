//! Facts from the process tree, in the core's terms: a host that runs the child samples its
//! tree ([`TreeSample`]: per process its pid and start, parent, group, command, state, CPU
//! time, resident memory, age and TCP connections) and hands each sample to the registry
//! ([`Registry::observe_tree`](crate::Registry::observe_tree)), like any other host fact.
//! The rules stay pure: the same samples, live or from a capture, give the same verdicts.
//!
//! # The rules
//!
//! - **Busy is not hung.** While a tool call is outstanding (its `tool_use`, or a
//!   `tool_progress` heartbeat, until its `tool_result` or the turn's `result`), its
//!   processes are the child's descendants that started no earlier than the call, less 2 s
//!   (the call's line reaches the host after its tool may have started). When, between two
//!   samples, they used at least 5 % of one core, or moved at least 1 KiB a second on their
//!   TCP connections, the tool is **busy**: the no-progress kill comes no earlier than that
//!   sample plus `no_progress`, and never later than the last progress
//!   plus [`busy_cap`](crate::Limits::busy_cap) (0: evidence never holds it). A tool whose
//!   processes neither use CPU nor move bytes for the no-progress span is hung, as the
//!   stream alone says. The idle clock is untouched: Claude Code's heartbeats keep it
//!   honest.
//! - **The memory guard.** When the tree's resident memory (every process's, summed) stays
//!   above [`max_rss`](crate::Limits::max_rss) from one sample on for 5 s, the session is
//!   killed `memory`, whatever else holds (a wait, a blocked output, a settled session).
//! - **No evidence, no change.** A sample that could not be read (`fault`) ends any busy
//!   spell and memory spell: until the next good one the rules are the stream's alone.
//!
//! A kill carries what the tree said ([`TreeEvidence`]), the run's record what its samples
//! said ([`TreeFacts`]: the peak memory among them), and the host adds its receipt
//! ([`Receipt`]). The rules run on each session's tree state (`session::tree`, in the
//! registry's nanoseconds), so these facts depend on nothing of the session's.

mod command;
mod receipt;
mod sample;

pub(crate) use command::is_shell;

pub use receipt::{Ended, ProcAction, Receipt, ReceiptCause, ToolCall, TreeEvidence, TreeFacts};
pub use sample::{ProcFacts, ProcState, TreeSample};

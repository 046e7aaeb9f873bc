//! `agent-watchdog hook`: the Claude Code command hook that continues a subagent cut off by the
//! output token limit **once** (the `dsh-subagent-watchdog` contract on Claude Code).
//!
//! Claude Code runs it with one JSON object on stdin and reads one on stdout (see
//! `plugin/hooks/hooks.json`):
//!
//! - `PostToolUseFailure` (matcher `Agent`): a foreground agent died. Its `tool_use_id` is
//!   mapped to the agent id through `agent-<id>.meta.json`; if the agent's transcript ends in
//!   the synthetic `apiError: "max_output_tokens"` entry (or still in the cut-off reply, the
//!   synthetic entry not written yet, and the reported error is `max_output_tokens`) and the
//!   durable marker is claimed, the parent gets `additionalContext` telling it to
//!   `SendMessage` exactly that agent.
//! - `Stop`: the safety net (and the only signal for background agents): every
//!   `subagents/agent-*.jsonl` of the session is checked the same way; what must be said goes
//!   out as `{"decision":"block","reason":…}`, which makes the parent take one more turn.
//!   A `Stop` is never blocked for any other reason.
//!
//! A continued agent that fails again (output limit or another API error) gets exactly one
//! notice with the facts and the manual options. Markers live where `run`'s do: the shared
//! ledger of `--ledger` / `AGENT_WATCHDOG_LEDGER` (Redis, PostgreSQL), else the state directory
//! (`--state-dir`, `AGENT_WATCHDOG_STATE_DIR`, default `$XDG_STATE_HOME/agent-watchdog`).
//!
//! Every error fails closed: nothing on stdout (no decision), one line on stderr, exit 0. A hook
//! never breaks the user's session.

mod act;
mod args;
mod input;
mod output;
mod session_files;

use std::io::{Read, Write};

use crate::ledger_choice::{LedgerChoice, MarkerLedger};
use watchdog_core::recovery::Recovery;
use watchdog_core::recovery::Trigger;

use act::{consider, LedgerSource, Said};
pub use args::HookArgs;
use input::{Event, HookInput};
use session_files::SubagentFiles;

/// Hook input larger than this is not one Claude Code sends (the hook then does nothing).
const MAX_INPUT_BYTES: u64 = 16 << 20;

/// What the hook prints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Response {
    /// The JSON for stdout, if there is a decision.
    pub stdout: Option<String>,
    /// One line for stderr, if something went wrong.
    pub stderr: Option<String>,
}

struct Lazy {
    /// A bad `--ledger` is said only when a ledger is needed (a healthy session never is).
    choice: Result<LedgerChoice, String>,
    ledger: Option<MarkerLedger>,
}

impl LedgerSource for Lazy {
    type Ledger = MarkerLedger;
    fn ledger(&mut self) -> Result<&MarkerLedger, String> {
        if self.ledger.is_none() {
            self.ledger = Some(self.choice.as_ref().map_err(Clone::clone)?.open()?);
        }
        self.ledger
            .as_ref()
            .ok_or_else(|| "ledger unavailable".to_owned())
    }
}

/// Answer one hook input (`now_ms`: the wall clock, epoch ms). Never panics; errors become the
/// stderr line.
pub(crate) fn respond(args: &HookArgs, stdin: &[u8], now_ms: u64) -> Response {
    let input = match HookInput::parse(stdin) {
        Ok(i) => i,
        Err(e) => return failed(e.to_string()),
    };
    if args.no_recover_output_limit || matches!(input.event, Event::Other(_)) {
        return Response::default();
    }
    let recovery = Recovery::default().with_trigger(Trigger::OutputLimit, true);
    let Some(dir) = input.subagents_dir() else {
        return failed(format!(
            "no session directory beside transcript_path {:?}",
            input.transcript_path
        ));
    };
    let files = SubagentFiles::new(dir);
    let mut source = Lazy {
        choice: args.ledger_choice(),
        ledger: None,
    };
    match &input.event {
        Event::Other(_) => Response::default(),
        Event::PostToolUseFailure {
            tool_name,
            tool_use_id,
            error,
        } => {
            if tool_name != "Agent" && tool_name != "Task" {
                return Response::default();
            }
            let agent = match files.agent_for_tool_use(tool_use_id) {
                Ok(Some(a)) => a,
                Ok(None) => return Response::default(),
                Err(e) => return failed(e.to_string()),
            };
            match consider(
                &recovery,
                &files,
                &mut source,
                &input.session_id,
                &agent,
                Some(error),
                now_ms,
            ) {
                Ok(Some(said)) => Response {
                    stdout: Some(output::additional_context(said.text())),
                    stderr: None,
                },
                Ok(None) => Response::default(),
                Err(e) => failed(format!("agent {agent}: {e}")),
            }
        }
        Event::Stop { .. } => {
            let agents = match files.agent_ids() {
                Ok(a) => a,
                Err(e) => return failed(e.to_string()),
            };
            let mut said: Vec<Said> = Vec::new();
            let mut errors = Vec::new();
            for agent in &agents {
                match consider(
                    &recovery,
                    &files,
                    &mut source,
                    &input.session_id,
                    agent,
                    None,
                    now_ms,
                ) {
                    Ok(Some(s)) => said.push(s),
                    Ok(None) => {}
                    Err(e) => errors.push(format!("agent {agent}: {e}")),
                }
            }
            let texts: Vec<&str> = said.iter().map(Said::text).collect();
            Response {
                stdout: (!texts.is_empty()).then(|| output::block(&texts.join("\n\n"))),
                stderr: (!errors.is_empty())
                    .then(|| format!("agent-watchdog hook: {}", errors.join("; "))),
            }
        }
    }
}

fn failed(why: String) -> Response {
    Response {
        stdout: None,
        stderr: Some(format!("agent-watchdog hook: {why}")),
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis().min(u128::from(u64::MAX)) as u64)
        .unwrap_or(0)
}

/// Read the hook input: at most [`MAX_INPUT_BYTES`], more is an error (never buffered).
fn read_input(stdin: impl Read) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    stdin
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(format!(
            "hook input larger than {} MiB: not one Claude Code sends",
            MAX_INPUT_BYTES >> 20
        ));
    }
    Ok(bytes)
}

/// The `hook` subcommand: read stdin, answer, always exit 0 (see [`guarded`] for panics).
pub fn main(args: HookArgs) -> i32 {
    let (args, notes) = args.with_env(|k| std::env::var_os(k));
    let mut response = match read_input(std::io::stdin().lock()) {
        Ok(bytes) => respond(&args, &bytes, now_ms()),
        Err(e) => failed(e),
    };
    if !notes.is_empty() {
        // One line in all: the notes, then what went wrong, if anything.
        let mut line = format!("agent-watchdog hook: {}", notes.join("; "));
        if let Some(err) = response.stderr.take() {
            line.push_str("; ");
            line.push_str(err.trim_start_matches("agent-watchdog hook: "));
        }
        response.stderr = Some(line);
    }
    if let Some(out) = &response.stdout {
        let mut o = std::io::stdout().lock();
        // A closed stdout leaves nothing to do: Claude Code then sees no decision.
        let _ = o.write_all(out.as_bytes()).and_then(|()| o.flush());
    }
    if let Some(err) = &response.stderr {
        let _ = writeln!(std::io::stderr().lock(), "{err}");
    }
    0
}

/// Run `f` (the hook), turning a panic into its message: for Claude Code an exit code of 2
/// blocks the session and any other non-zero one is an error it shows, so whatever goes wrong
/// inside, the hook still ends with exit 0 (the caller prints the one line).
pub fn guarded(f: impl FnOnce() -> i32 + std::panic::UnwindSafe) -> Result<i32, String> {
    std::panic::catch_unwind(f).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_owned())
    })
}

/// What the `hook` subcommand prints when its command line cannot be parsed (clap's text):
/// one line, no decision, exit 0.
pub fn usage_failure_line(rendered: &str) -> String {
    let first = rendered
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("bad arguments");
    format!(
        "agent-watchdog hook: {}: doing nothing",
        first.trim_start_matches("error: ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_events_and_the_off_switch_say_nothing_at_all() {
        let args = HookArgs::default();
        for input in [
            r#"{"hook_event_name":"SubagentStop","session_id":"x"}"#,
            r#"{"hook_event_name":"StopFailure"}"#,
        ] {
            assert_eq!(respond(&args, input.as_bytes(), 0), Response::default());
        }
        let off = HookArgs {
            no_recover_output_limit: true,
            ..HookArgs::default()
        };
        let stop = r#"{"hook_event_name":"Stop","session_id":"s","transcript_path":"/nonexistent/s.jsonl"}"#;
        assert_eq!(respond(&off, stop.as_bytes(), 0), Response::default());
    }

    #[test]
    fn a_session_without_subagents_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let args = HookArgs {
            state_dir: Some(dir.path().join("state")),
            ..HookArgs::default()
        };
        let stop = serde_json::json!({
            "hook_event_name": "Stop",
            "session_id": "79a60e20-b342-4ecc-aa97-cb905bafbe16",
            "transcript_path": dir.path().join("79a60e20-b342-4ecc-aa97-cb905bafbe16.jsonl"),
        });
        assert_eq!(
            respond(&args, stop.to_string().as_bytes(), 0),
            Response::default()
        );
        assert!(!dir.path().join("state").exists());
    }

    #[test]
    fn a_panic_inside_the_guard_is_its_message_never_an_unwind() {
        assert_eq!(guarded(|| 0), Ok(0));
        let literal = guarded(|| panic!("boom"));
        let formatted = guarded(|| panic!("agent {}", 7));
        let other = guarded(|| std::panic::panic_any(42_u8));
        assert_eq!(literal, Err("boom".to_owned()));
        assert_eq!(formatted, Err("agent 7".to_owned()));
        assert_eq!(other, Err("a panic".to_owned()));
    }

    #[test]
    fn stdin_over_the_cap_is_refused_without_buffering_it() {
        let huge = std::io::repeat(b' ').take(MAX_INPUT_BYTES * 4);
        let err = read_input(huge).unwrap_err();
        assert!(err.contains("larger than 16 MiB"), "{err}");
        assert_eq!(read_input(&b"{}"[..]).unwrap(), b"{}");
        let usage = usage_failure_line("error: unexpected argument '--x' found\n\nUsage: …");
        assert_eq!(
            usage,
            "agent-watchdog hook: unexpected argument '--x' found: doing nothing"
        );
    }
}

//! What Claude Code gives a command hook on stdin, as far as the subagent watchdog cares.

use std::path::PathBuf;

use serde_json::Value;

/// The events the hook acts on; every other one is ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `PostToolUseFailure`: a tool call failed; for `Agent`, a foreground subagent died.
    PostToolUseFailure {
        /// `tool_name` (`Agent`, or `Task` in older builds).
        tool_name: String,
        /// `tool_use_id` of the failed call.
        tool_use_id: String,
        /// `error`, the text the parent got.
        error: String,
    },
    /// `Stop`: the top level is about to end its turn.
    Stop {
        /// `stop_hook_active`: this turn was already made by a Stop hook's block.
        stop_hook_active: bool,
    },
    /// Anything else (the event name).
    Other(String),
}

/// One hook input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookInput {
    /// `session_id`.
    pub session_id: String,
    /// `transcript_path`: the session's transcript, beside which its subagents live.
    pub transcript_path: PathBuf,
    /// The event.
    pub event: Event,
}

/// Why an input cannot be used (the hook then does nothing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// Not a JSON object.
    #[error("hook input is not a JSON object: {0}")]
    NotJson(String),
    /// A field the event needs is missing or not a string.
    #[error("hook input has no string field {0:?}")]
    Missing(&'static str),
}

fn field<'a>(v: &'a Value, name: &'static str) -> Result<&'a str, InputError> {
    v.get(name)
        .and_then(Value::as_str)
        .ok_or(InputError::Missing(name))
}

impl HookInput {
    /// Parse the hook's stdin.
    pub fn parse(bytes: &[u8]) -> Result<HookInput, InputError> {
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| InputError::NotJson(e.to_string()))?;
        if !v.is_object() {
            return Err(InputError::NotJson("another JSON type".into()));
        }
        let name = field(&v, "hook_event_name")?;
        let event = match name {
            "PostToolUseFailure" => Event::PostToolUseFailure {
                tool_name: field(&v, "tool_name")?.to_owned(),
                tool_use_id: field(&v, "tool_use_id")?.to_owned(),
                error: v
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            },
            "Stop" => Event::Stop {
                stop_hook_active: v
                    .get("stop_hook_active")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            other => Event::Other(other.to_owned()),
        };
        if let Event::Other(_) = event {
            // Ignored events need nothing else.
            return Ok(HookInput {
                session_id: String::new(),
                transcript_path: PathBuf::new(),
                event,
            });
        }
        Ok(HookInput {
            session_id: field(&v, "session_id")?.to_owned(),
            transcript_path: PathBuf::from(field(&v, "transcript_path")?),
            event,
        })
    }

    /// The directory of the session's subagent transcripts:
    /// `<project dir>/<session id>/subagents` beside `<project dir>/<session id>.jsonl`.
    pub fn subagents_dir(&self) -> Option<PathBuf> {
        let parent = self.transcript_path.parent()?;
        let stem = self.transcript_path.file_stem()?;
        Some(parent.join(stem).join("subagents"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_recorded_post_tool_use_failure_and_stop() {
        let ptuf = br#"{"session_id":"8b2b28c0-67e9-4797-aba8-198a83a7fad4","transcript_path":"/home/user/.claude/projects/-home-user-project/8b2b28c0-67e9-4797-aba8-198a83a7fad4.jsonl","cwd":"/home/user/project","hook_event_name":"PostToolUseFailure","tool_name":"Agent","tool_input":{},"tool_use_id":"toolu_mock_agent_1","error":"Agent terminated early (error type max_output_tokens)","is_interrupt":false}"#;
        let i = HookInput::parse(ptuf).unwrap();
        assert_eq!(
            i.event,
            Event::PostToolUseFailure {
                tool_name: "Agent".into(),
                tool_use_id: "toolu_mock_agent_1".into(),
                error: "Agent terminated early (error type max_output_tokens)".into(),
            }
        );
        assert_eq!(
            i.subagents_dir().unwrap(),
            PathBuf::from("/home/user/.claude/projects/-home-user-project/8b2b28c0-67e9-4797-aba8-198a83a7fad4/subagents")
        );
        let stop = br#"{"session_id":"s","transcript_path":"/p/s.jsonl","hook_event_name":"Stop","stop_hook_active":true}"#;
        assert_eq!(
            HookInput::parse(stop).unwrap().event,
            Event::Stop {
                stop_hook_active: true
            }
        );
    }

    #[test]
    fn bad_inputs_are_errors_and_other_events_are_ignored() {
        assert!(matches!(
            HookInput::parse(b"nope"),
            Err(InputError::NotJson(_))
        ));
        assert!(matches!(
            HookInput::parse(b"[1]"),
            Err(InputError::NotJson(_))
        ));
        assert_eq!(
            HookInput::parse(br#"{"hook_event_name":"Stop"}"#),
            Err(InputError::Missing("session_id"))
        );
        assert_eq!(
            HookInput::parse(br#"{"hook_event_name":"SubagentStop"}"#)
                .unwrap()
                .event,
            Event::Other("SubagentStop".into())
        );
        assert_eq!(
            HookInput::parse(br#"{"x":1}"#),
            Err(InputError::Missing("hook_event_name"))
        );
    }
}

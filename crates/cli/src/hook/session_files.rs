//! The session's subagent files, as Claude Code 2.1.332 writes them:
//! `<session dir>/subagents/agent-<id>.jsonl` (the transcript) and `agent-<id>.meta.json`
//! (`agentType`, `toolUseId`, …).

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::Value;
use watchdog_core::recovery::subagent::{SubagentEnd, TranscriptEnd};

/// Only the end of a transcript matters: first this much is read, …
const SHORT_TAIL_BYTES: u64 = 256 << 10;
/// … and at most this much when the short tail holds no message entry.
const TAIL_BYTES: u64 = 8 << 20;
/// A meta file larger than this is not one Claude Code wrote.
const MAX_META_BYTES: u64 = 1 << 20;

/// The subagent files of one session.
#[derive(Debug, Clone)]
pub struct SubagentFiles {
    dir: PathBuf,
}

/// What `agent-<id>.meta.json` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// `agentType`.
    pub agent_type: Option<String>,
    /// `toolUseId`: the `Agent` call that started it.
    pub tool_use_id: Option<String>,
}

impl SubagentFiles {
    /// The files in `dir` (`<session dir>/subagents`).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SubagentFiles { dir: dir.into() }
    }

    /// The ids of every agent with a transcript, sorted; none when the directory is missing.
    pub fn agent_ids(&self) -> io::Result<Vec<String>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(with_path(e, &self.dir)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| with_path(e, &self.dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(id) = name
                .strip_prefix("agent-")
                .and_then(|n| n.strip_suffix(".jsonl"))
            {
                ids.push(id.to_owned());
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// The meta file of `agent_id`; `None` if it does not exist.
    pub fn meta(&self, agent_id: &str) -> io::Result<Option<Meta>> {
        let path = self.dir.join(format!("agent-{agent_id}.meta.json"));
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(with_path(e, &path)),
        };
        let mut bytes = Vec::new();
        file.take(MAX_META_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|e| with_path(e, &path))?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        Ok(Some(Meta {
            agent_type: s("agentType"),
            tool_use_id: s("toolUseId"),
        }))
    }

    /// The agent whose meta file names `tool_use_id`, if any.
    /// An unreadable meta file of another agent does not hide the one asked for; it is the
    /// error only when no agent matches.
    pub fn agent_for_tool_use(&self, tool_use_id: &str) -> io::Result<Option<String>> {
        let mut first_error = None;
        for id in self.agent_ids()? {
            match self.meta(&id) {
                Ok(Some(meta)) if meta.tool_use_id.as_deref() == Some(tool_use_id) => {
                    return Ok(Some(id))
                }
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// How the transcript of `agent_id` ends: read from its last 256 KiB, or its last 8 MiB
    /// when those hold no message entry.
    pub fn end(&self, agent_id: &str) -> io::Result<TranscriptEnd> {
        let path = self.dir.join(format!("agent-{agent_id}.jsonl"));
        let (end, longer) = self.tail(&path, SHORT_TAIL_BYTES)?;
        if end.end != SubagentEnd::Unknown || !longer {
            return Ok(end);
        }
        Ok(self.tail(&path, TAIL_BYTES)?.0)
    }

    /// The synthetic error entries in the whole transcript of `agent_id` (lines holding
    /// `"isApiErrorMessage":true`; counted without parsing, streaming the file).
    pub fn failure_count(&self, agent_id: &str) -> io::Result<usize> {
        let path = self.dir.join(format!("agent-{agent_id}.jsonl"));
        let file = File::open(&path).map_err(|e| with_path(e, &path))?;
        let mut reader = io::BufReader::new(file);
        let needles = [
            memchr::memmem::Finder::new(b"\"isApiErrorMessage\":true"),
            memchr::memmem::Finder::new(b"\"isApiErrorMessage\": true"),
        ];
        let mut line = Vec::new();
        let mut n = 0;
        loop {
            line.clear();
            if reader
                .read_until(b'\n', &mut line)
                .map_err(|e| with_path(e, &path))?
                == 0
            {
                return Ok(n);
            }
            if needles.iter().any(|f| f.find(&line).is_some()) {
                n += 1;
            }
        }
    }

    /// What the last `bytes` of `path` say, and whether the file is longer.
    fn tail(&self, path: &Path, bytes: u64) -> io::Result<(TranscriptEnd, bool)> {
        let mut file = File::open(path).map_err(|e| with_path(e, path))?;
        let len = file.metadata().map_err(|e| with_path(e, path))?.len();
        let start = len.saturating_sub(bytes);
        file.seek(SeekFrom::Start(start))
            .map_err(|e| with_path(e, path))?;
        let mut buf = Vec::new();
        file.take(bytes)
            .read_to_end(&mut buf)
            .map_err(|e| with_path(e, path))?;
        let text = String::from_utf8_lossy(&buf);
        let mut lines = text.lines();
        if start > 0 {
            // The first line of a tail is a fragment.
            lines.next();
        }
        Ok((SubagentEnd::from_transcript(lines), start > 0))
    }
}

fn with_path(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_agents_maps_tool_uses_and_reads_ends() {
        let dir = tempfile::tempdir().unwrap();
        let files = SubagentFiles::new(dir.path().join("missing"));
        assert!(
            files.agent_ids().unwrap().is_empty(),
            "no directory, no agents"
        );
        let files = SubagentFiles::new(dir.path());
        std::fs::write(
            dir.path().join("agent-a1.jsonl"),
            "{\"type\":\"assistant\",\"uuid\":\"u\",\"isApiErrorMessage\":true,\"apiError\":\"max_output_tokens\",\"message\":{\"content\":[]}}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("agent-a1.meta.json"),
            r#"{"agentType":"general-purpose","toolUseId":"toolu_1"}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("agent-b2.jsonl"), "").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "").unwrap();
        assert_eq!(files.agent_ids().unwrap(), ["a1", "b2"]);
        assert_eq!(
            files.agent_for_tool_use("toolu_1").unwrap().as_deref(),
            Some("a1")
        );
        assert_eq!(files.agent_for_tool_use("toolu_9").unwrap(), None);
        assert_eq!(files.meta("b2").unwrap(), None);
        assert_eq!(files.end("a1").unwrap().end, SubagentEnd::OutputLimit);
        assert_eq!(files.end("b2").unwrap().end, SubagentEnd::Unknown);
        assert!(files.end("zz").is_err());
        std::fs::write(dir.path().join("agent-b2.meta.json"), "{bad").unwrap();
        assert!(files.meta("b2").is_err());
        // The end entry behind a huge attachment line: found in the longer tail.
        let synthetic = std::fs::read_to_string(dir.path().join("agent-a1.jsonl")).unwrap();
        let big = format!(
            "{{\"type\":\"attachment\",\"text\":\"{}\"}}\n",
            "x".repeat(300 << 10)
        );
        std::fs::write(
            dir.path().join("agent-c3.jsonl"),
            format!("{synthetic}{big}"),
        )
        .unwrap();
        assert_eq!(files.end("c3").unwrap().end, SubagentEnd::OutputLimit);
        // Failures are counted over the whole file, not only the tail.
        let twice = format!("{synthetic}{big}{big}{synthetic}");
        std::fs::write(dir.path().join("agent-d4.jsonl"), twice).unwrap();
        assert_eq!(files.failure_count("d4").unwrap(), 2);
        assert_eq!(files.failure_count("b2").unwrap(), 0);
        let end = files.end("d4").unwrap();
        assert_eq!(end.failures, 1, "the short tail sees one");
        let end = end.with_failure_count(files.failure_count("d4").unwrap());
        assert_eq!(end.failure_id.as_deref(), Some("failure-2"));
    }
}

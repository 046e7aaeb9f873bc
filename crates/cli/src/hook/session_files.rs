//! The session's subagent files, as Claude Code 2.1.332 writes them:
//! `<session dir>/subagents/agent-<id>.jsonl` (the transcript) and `agent-<id>.meta.json`
//! (`agentType`, `toolUseId`, …).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use agent_sdk_watchdog::{open_regular, read_regular};
use std::path::{Path, PathBuf};

use serde_json::Value;
use watchdog_core::recovery::subagent::{SubagentEnd, TranscriptEnd};

/// Only the end of a transcript matters: first this much is read, …
const SHORT_TAIL_BYTES: u64 = 256 << 10;
/// … and at most this much when the short tail holds no message entry.
const TAIL_BYTES: u64 = 8 << 20;
/// A meta file larger than this is not one Claude Code wrote.
const MAX_META_BYTES: u64 = 1 << 20;
/// A transcript larger than this is not scanned for its failures (the hook then says nothing
/// about that agent): a hook has 30 s.
pub const MAX_TRANSCRIPT_BYTES: u64 = 1 << 30;

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
        let bytes = match read_regular(&path, MAX_META_BYTES, true) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(named(e, &path)),
        };
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
    /// `"isApiErrorMessage":true`; counted without parsing, streaming the file in chunks, so an
    /// endless line costs no memory). A transcript over [`MAX_TRANSCRIPT_BYTES`] is an error.
    pub fn failure_count(&self, agent_id: &str) -> io::Result<usize> {
        let path = self.dir.join(format!("agent-{agent_id}.jsonl"));
        let file = open(&path)?;
        let len = file.metadata().map_err(|e| with_path(e, &path))?.len();
        if len > MAX_TRANSCRIPT_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: larger than {} MiB, not scanned",
                    path.display(),
                    MAX_TRANSCRIPT_BYTES >> 20
                ),
            ));
        }
        count_lines_with(
            file.take(MAX_TRANSCRIPT_BYTES),
            &[
                b"\"isApiErrorMessage\":true",
                b"\"isApiErrorMessage\": true",
            ],
        )
        .map_err(|e| with_path(e, &path))
    }

    /// What the last `bytes` of `path` say, and whether the file is longer.
    fn tail(&self, path: &Path, bytes: u64) -> io::Result<(TranscriptEnd, bool)> {
        let mut file = open(path)?;
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

/// Open a subagent file only if it is a regular file: a FIFO, a device or a directory in its
/// place is refused at once (never read, never waited on).
fn open(path: &Path) -> io::Result<File> {
    open_regular(path, true).map_err(|e| named(e, path))
}

/// `e` with the path, unless [`open_regular`]'s message already names it.
fn named(e: io::Error, path: &Path) -> io::Error {
    if matches!(
        e.kind(),
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData
    ) {
        e
    } else {
        with_path(e, path)
    }
}

/// How many lines of `reader` hold one of `needles`, reading fixed-size chunks (a needle across
/// two chunks is found; memory stays one chunk whatever the line lengths).
fn count_lines_with(mut reader: impl Read, needles: &[&[u8]]) -> io::Result<usize> {
    let finders: Vec<_> = needles.iter().map(memchr::memmem::Finder::new).collect();
    let keep = needles.iter().map(|n| n.len()).max().unwrap_or(1) - 1;
    let mut buf = vec![0u8; 64 << 10];
    // The end of the current line not yet matched (at most `keep` bytes between chunks).
    let mut window: Vec<u8> = Vec::new();
    let mut counted = false;
    let mut n = 0;
    loop {
        let got = match reader.read(&mut buf) {
            Ok(0) => return Ok(n),
            Ok(got) => got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut rest = &buf[..got];
        loop {
            let newline = memchr::memchr(b'\n', rest);
            let segment = &rest[..newline.unwrap_or(rest.len())];
            if !counted {
                window.extend_from_slice(segment);
                if finders.iter().any(|f| f.find(&window).is_some()) {
                    counted = true;
                    n += 1;
                }
            }
            match newline {
                Some(i) => {
                    counted = false;
                    window.clear();
                    rest = &rest[i + 1..];
                }
                None => {
                    let drop = if counted {
                        window.len()
                    } else {
                        window.len().saturating_sub(keep)
                    };
                    window.drain(..drop);
                    break;
                }
            }
        }
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

    #[test]
    fn failures_are_counted_per_line_across_chunks_in_bounded_memory() {
        let needle: &[u8] = b"\"isApiErrorMessage\":true";
        // A needle split by the 64 KiB chunk boundary, one twice on a line, one on an endless
        // line of zeros (40 MiB with no newline).
        let mut input = vec![b'x'; (64 << 10) - 10];
        input.extend_from_slice(needle);
        input.extend_from_slice(b"\n");
        input.extend_from_slice(needle);
        input.extend_from_slice(needle);
        input.extend_from_slice(b"\nno\n");
        let zeros = io::repeat(0).take(40 << 20);
        let reader = (&input[..]).chain(zeros).chain(needle).chain(&b"\n"[..]);
        assert_eq!(count_lines_with(reader, &[needle]).unwrap(), 3);
        assert_eq!(
            count_lines_with(&b"isApi\nErrorMessage"[..], &[needle]).unwrap(),
            0
        );
    }
}

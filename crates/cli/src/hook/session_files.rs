//! The session's subagent files, as Claude Code 2.1.332 writes them:
//! `<session dir>/subagents/agent-<id>.jsonl` (the transcript) and `agent-<id>.meta.json`
//! (`agentType`, `toolUseId`, …).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use agent_sdk_watchdog::{open_regular, read_regular};
use std::path::{Path, PathBuf};

use serde_json::Value;
use watchdog_core::recovery::{SubagentEnd, TranscriptEnd};

/// Only the end of a transcript matters: first this much is read, …
const SHORT_TAIL_BYTES: u64 = 256 << 10;
/// … and at most this much when the short tail holds no message entry.
const TAIL_BYTES: u64 = 8 << 20;
/// A meta file larger than this is not one Claude Code wrote.
const MAX_META_BYTES: u64 = 1 << 20;
/// A transcript larger than this is not scanned for its failures (the hook then says nothing
/// about that agent): a hook has
/// [`PLUGIN_HOOK_TIMEOUT`](watchdog_host::claude_code::PLUGIN_HOOK_TIMEOUT) (30 s).
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

    /// How the transcript of `agent_id` ends, combined with the failure Claude Code reported
    /// for it (`PostToolUseFailure`'s `error`), if any.
    ///
    /// One snapshot: the file is opened once and everything is read from its first `len` bytes
    /// (`len` taken once, when opened), so the end and the failure count cannot disagree while
    /// Claude Code appends (measured under load: read apart, a synthetic entry written between
    /// the two reads made the first failure look like the second, and the later real second
    /// failure was then taken for the one already continued). The end comes from the last
    /// 256 KiB, or the last 8 MiB when those hold no message entry; when it is a failure (or
    /// one was reported), the failures are counted over the whole snapshot (lines holding
    /// `"isApiErrorMessage":true`, streamed in chunks: an endless line costs no memory). A
    /// transcript over [`MAX_TRANSCRIPT_BYTES`] is then an error.
    pub fn end(&self, agent_id: &str, reported_error: Option<&str>) -> io::Result<TranscriptEnd> {
        let path = self.dir.join(format!("agent-{agent_id}.jsonl"));
        let mut file = open(&path)?;
        let len = file.metadata().map_err(|e| with_path(e, &path))?.len();
        snapshot_end(&mut file, len, reported_error).map_err(|e| with_path(e, &path))
    }
}

/// [`SubagentFiles::end`] over the first `len` bytes of `file`, whatever was appended since.
fn snapshot_end(
    file: &mut File,
    len: u64,
    reported_error: Option<&str>,
) -> io::Result<TranscriptEnd> {
    let (mut end, longer) = tail(file, len, SHORT_TAIL_BYTES)?;
    if end.end == SubagentEnd::Unknown && longer {
        end = tail(file, len, TAIL_BYTES)?.0;
    }
    if end.end.is_failure() || reported_error.is_some() {
        // The failure's id counts every failure of the agent, not only those in the tail.
        if len > MAX_TRANSCRIPT_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "larger than {} MiB, not scanned",
                    MAX_TRANSCRIPT_BYTES >> 20
                ),
            ));
        }
        file.seek(SeekFrom::Start(0))?;
        let n = count_lines_with(
            (&mut *file).take(len),
            &[
                b"\"isApiErrorMessage\":true",
                b"\"isApiErrorMessage\": true",
            ],
        )?;
        end = end.with_failure_count(n);
    }
    if let Some(reported) = reported_error {
        end = end.with_reported_error(reported);
    }
    Ok(end)
}

/// What the last `bytes` of the first `len` bytes of `file` say, and whether there is more
/// before them.
fn tail(file: &mut File, len: u64, bytes: u64) -> io::Result<(TranscriptEnd, bool)> {
    let start = len.saturating_sub(bytes);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    (&mut *file).take(len - start).read_to_end(&mut buf)?;
    let text = String::from_utf8_lossy(&buf);
    let mut lines = text.lines();
    if start > 0 {
        // The first line of a tail is a fragment.
        lines.next();
    }
    Ok((SubagentEnd::from_transcript(lines), start > 0))
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
    use std::io::Write;

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
        assert_eq!(files.end("a1", None).unwrap().end, SubagentEnd::OutputLimit);
        assert_eq!(files.end("b2", None).unwrap().end, SubagentEnd::Unknown);
        assert!(files.end("zz", None).is_err());
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
        assert_eq!(files.end("c3", None).unwrap().end, SubagentEnd::OutputLimit);
        // Failures are counted over the whole file, not only the short tail.
        let twice = format!("{synthetic}{big}{big}{synthetic}");
        std::fs::write(dir.path().join("agent-d4.jsonl"), twice).unwrap();
        let end = files.end("d4", None).unwrap();
        assert_eq!(end.failures, 2);
        assert_eq!(end.failure_id.as_deref(), Some("failure-2"));
        // Healthy: not counted, no id.
        assert_eq!(files.end("b2", None).unwrap().failure_id, None);
    }

    /// The end and the failure count come from one snapshot: an entry appended after the
    /// snapshot was taken changes neither (the race a loaded machine showed, where the first
    /// failure was counted as the second).
    #[test]
    fn end_and_failure_count_are_one_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent-a1.jsonl");
        let cut = "{\"type\":\"assistant\",\"message\":{\"stop_reason\":\"max_tokens\",\"content\":[{\"type\":\"text\",\"text\":\"partial\"}]}}\n";
        let synthetic = "{\"type\":\"assistant\",\"isApiErrorMessage\":true,\"apiError\":\"max_output_tokens\",\"message\":{\"content\":[]}}\n";
        let reported = "Agent terminated early (error type max_output_tokens)";
        // Written on a plain file, the reported failure is the first either way.
        for before in [cut.to_owned(), format!("{cut}{synthetic}")] {
            std::fs::write(&path, &before).unwrap();
            let end = SubagentFiles::new(dir.path())
                .end("a1", Some(reported))
                .unwrap();
            assert_eq!(end.end, SubagentEnd::OutputLimit, "{before}");
            assert_eq!(end.failure_id.as_deref(), Some("failure-1"), "{before}");
        }
        // The synthetic entry lands after the snapshot's length was taken: still failure-1.
        std::fs::write(&path, cut).unwrap();
        let mut file = File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(synthetic.as_bytes())
            .unwrap();
        let end = snapshot_end(&mut file, len, Some(reported)).unwrap();
        assert_eq!(end.failures, 0, "the appended entry is not in the snapshot");
        assert_eq!(end.failure_id.as_deref(), Some("failure-1"));
        // The second failure, once written, gets the next id: a notice, not a duplicate.
        std::fs::write(&path, format!("{cut}{synthetic}{cut}{synthetic}")).unwrap();
        let end = SubagentFiles::new(dir.path()).end("a1", None).unwrap();
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

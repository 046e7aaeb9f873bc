//! Running the real Claude Code CLI against the mock.
//!
//! [`find_claude`] locates the binary; [`ClaudeRun`] builds the command line and the
//! (cleared) environment for one `claude -p` run in a fresh temporary `HOME` and
//! working directory; [`ClaudeCommand`] turns it into a std or tokio `Command`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The CLI version the project pins (see `scripts/install-claude`).
pub const PINNED_VERSION: &str = "2.1.332";

/// The command that installs the pinned CLI.
pub const INSTALL_COMMAND: &str = "scripts/install-claude";

const LOCAL_BIN: &str = ".tools/claude/node_modules/.bin/claude";

/// Encodes bytes as unpadded base64url (RFC 4648 §5), as used in JWTs.
pub fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let sextets = [(n >> 18) & 63, (n >> 12) & 63, (n >> 6) & 63, n & 63];
        for s in &sextets[..chunk.len() + 1] {
            out.push(char::from(ALPHABET[*s as usize]));
        }
    }
    out
}

/// An unsigned JWT whose payload has `"aud":"claude-gateway"`.
///
/// Passed as `ANTHROPIC_AUTH_TOKEN` (with no `ANTHROPIC_API_KEY`) and a custom
/// `ANTHROPIC_BASE_URL`, it makes the CLI treat the server as a gateway and read the
/// unified rate-limit headers (the CLI only base64-decodes it, never verifies it).
pub fn gateway_jwt() -> String {
    let header = base64url(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = base64url(br#"{"aud":"claude-gateway","sub":"mock","exp":4102444800}"#);
    format!("{header}.{payload}.sig")
}

/// The repository's `testdata/` folder (recordings of the real CLI, see its README), found
/// from the current directory or the current executable upwards. Cargo runs tests and
/// benchmarks in their package's directory, so this finds the checkout they belong to.
/// Panics with a clear message when it is missing: tests never run on made-up protocol facts.
pub fn testdata_dir() -> PathBuf {
    let found = starts().into_iter().find_map(|start| {
        start
            .ancestors()
            .map(|dir| dir.join("testdata"))
            .find(|dir| dir.join("captures").is_dir())
    });
    match found {
        Some(dir) => dir,
        None => panic!(
            "the recordings are missing: no testdata/captures above the current directory ({}) \
             or the test executable; run the tests from a checkout of the repository",
            std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default()
        ),
    }
}

/// Where [`repo_root`] and [`testdata_dir`] start looking: the current directory, then the
/// current executable. (Never a path fixed at build time: an installed binary must not carry
/// the path of the machine it was built on.)
fn starts() -> Vec<PathBuf> {
    let mut starts = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        starts.push(cwd);
    }
    if let Ok(exe) = std::env::current_exe() {
        starts.push(exe);
    }
    starts
}

/// The repository root: the nearest ancestor of the current directory or the current
/// executable that holds `.tools` or a workspace `Cargo.toml`.
pub fn repo_root() -> Option<PathBuf> {
    starts().iter().find_map(|start| {
        start
            .ancestors()
            .find(|dir| {
                dir.join(".tools").is_dir()
                    || std::fs::read_to_string(dir.join("Cargo.toml"))
                        .is_ok_and(|t| t.contains("[workspace]"))
            })
            .map(Path::to_path_buf)
    })
}

/// Under cargo-nextest, a test that starts a real agent CLI must run in the `real-cli` test
/// group (`.config/nextest.toml`), which bounds how many start at once: each start costs about
/// a second of CPU, and too many at once starve the timing of every test beside them. A binary
/// that is not in the group fails here, naming the fix, instead of turning flaky under load.
pub fn check_real_cli_group() -> Result<(), String> {
    match std::env::var("NEXTEST_TEST_GROUP") {
        Ok(group) if group != "real-cli" => {
            let binary = std::env::var("NEXTEST_BINARY_ID").unwrap_or_default();
            Err(format!(
                "this test starts a real agent CLI but runs in nextest's test group '{group}': \
                 add its binary ({binary}) to the `real-cli` group in .config/nextest.toml"
            ))
        }
        _ => Ok(()),
    }
}

/// Finds the `claude` binary: `$CLAUDE_BIN`, then `<repo>/.tools/claude/node_modules/.bin/claude`,
/// then `claude` on `PATH`. The error says how to install it (or, under cargo-nextest, that the
/// test is outside the `real-cli` group: [`check_real_cli_group`]).
pub fn find_claude() -> Result<PathBuf, String> {
    check_real_cli_group()?;
    if let Some(bin) = std::env::var_os("CLAUDE_BIN").filter(|b| !b.is_empty()) {
        let bin = PathBuf::from(bin);
        return if bin.is_file() {
            Ok(bin)
        } else {
            Err(format!(
                "CLAUDE_BIN={} does not exist; unset it or run `{INSTALL_COMMAND}`",
                bin.display()
            ))
        };
    }
    let mut looked = Vec::new();
    if let Some(root) = repo_root() {
        let local = root.join(LOCAL_BIN);
        if local.is_file() {
            return Ok(local);
        }
        looked.push(local.display().to_string());
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("claude");
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    looked.push("claude on PATH".into());
    Err(format!(
        "Claude Code CLI not found (looked at: {}). Run `{INSTALL_COMMAND}` to install \
         @anthropic-ai/claude-code@{PINNED_VERSION} into .tools/claude, or set CLAUDE_BIN.",
        looked.join(", ")
    ))
}

/// Runs `claude --version` and returns its first word (e.g. `2.1.332`).
pub fn claude_version(bin: &Path) -> Result<String, String> {
    let out = std::process::Command::new(bin)
        .arg("--version")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .map_err(|e| format!("cannot run {} --version: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .next()
        .map(str::to_string)
        .ok_or_else(|| format!("{} --version printed nothing", bin.display()))
}

/// A fresh temporary `HOME`, working directory and `TMPDIR` for one CLI session,
/// removed when the last [`Arc`] to it is dropped.
#[derive(Debug)]
pub struct SessionDirs {
    root: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
    tmp: PathBuf,
}

impl SessionDirs {
    /// Creates `<tmp>/home`, `<tmp>/project` and `<tmp>/tmp` under a new temp dir.
    pub fn new() -> std::io::Result<Arc<SessionDirs>> {
        let root = tempfile::Builder::new().prefix("claude-e2e-").tempdir()?;
        let home = root.path().join("home");
        let cwd = root.path().join("project");
        let tmp = root.path().join("tmp");
        for d in [&home, &cwd, &tmp] {
            std::fs::create_dir_all(d)?;
        }
        Ok(Arc::new(SessionDirs {
            root,
            home,
            cwd,
            tmp,
        }))
    }

    /// The temp dir holding the other three.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// `HOME` of the run (sessions live in `HOME/.claude/projects/...`).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Working directory of the run.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// `TMPDIR` of the run.
    pub fn tmp(&self) -> &Path {
        &self.tmp
    }
}

/// How the CLI authenticates against the mock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// `ANTHROPIC_API_KEY` (the CLI ignores rate-limit headers then).
    ApiKey(String),
    /// No API key; `ANTHROPIC_AUTH_TOKEN` = [`gateway_jwt`] (rate-limit headers are read).
    Gateway,
}

/// Builder for one `claude -p` run against a mock server.
#[derive(Debug, Clone)]
pub struct ClaudeRun {
    program: PathBuf,
    base_url: String,
    prompt: String,
    auth: Auth,
    model: Option<String>,
    resume: Option<String>,
    partial_messages: bool,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    dirs: Arc<SessionDirs>,
}

impl ClaudeRun {
    /// A run of `program` against `base_url` with a fresh [`SessionDirs`].
    pub fn new(
        program: impl Into<PathBuf>,
        base_url: impl Into<String>,
        prompt: impl Into<String>,
    ) -> std::io::Result<Self> {
        Ok(ClaudeRun::with_dirs(
            program,
            base_url,
            prompt,
            SessionDirs::new()?,
        ))
    }

    /// A run in existing directories (e.g. to `--resume` an earlier session).
    pub fn with_dirs(
        program: impl Into<PathBuf>,
        base_url: impl Into<String>,
        prompt: impl Into<String>,
        dirs: Arc<SessionDirs>,
    ) -> Self {
        ClaudeRun {
            program: program.into(),
            base_url: base_url.into(),
            prompt: prompt.into(),
            auth: Auth::ApiKey("sk-test".into()),
            model: None,
            resume: None,
            partial_messages: true,
            args: Vec::new(),
            env: Vec::new(),
            dirs,
        }
    }

    /// Sets the authentication (default `ApiKey("sk-test")`).
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// Uses the gateway JWT instead of an API key (needed for `rate_limit_event`).
    pub fn gateway_auth(self) -> Self {
        self.auth(Auth::Gateway)
    }

    /// Adds `--model`.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Adds `--resume <session_id>`.
    pub fn resume(mut self, session_id: impl Into<String>) -> Self {
        self.resume = Some(session_id.into());
        self
    }

    /// Whether to pass `--include-partial-messages` (default true).
    pub fn partial_messages(mut self, on: bool) -> Self {
        self.partial_messages = on;
        self
    }

    /// Appends an extra argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Sets an extra environment variable (e.g. `CLAUDE_CODE_MAX_RETRIES`).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The run's directories (share them with a later run to resume).
    pub fn dirs(&self) -> &Arc<SessionDirs> {
        &self.dirs
    }

    /// The final program, arguments, environment and working directory.
    pub fn command(&self) -> ClaudeCommand {
        let mut args: Vec<OsString> = vec!["-p".into(), self.prompt.clone().into()];
        args.extend(["--output-format", "stream-json", "--verbose"].map(OsString::from));
        if self.partial_messages {
            args.push("--include-partial-messages".into());
        }
        args.extend(["--permission-mode", "bypassPermissions"].map(OsString::from));
        if let Some(m) = &self.model {
            args.extend(["--model".into(), m.into()]);
        }
        if let Some(id) = &self.resume {
            args.extend(["--resume".into(), id.into()]);
        }
        args.extend(self.args.iter().cloned());

        let mut env: Vec<(OsString, OsString)> = Vec::new();
        let mut set = |k: &str, v: OsString| env.push((k.into(), v));
        set(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        );
        set("HOME", self.dirs.home.clone().into());
        set("TMPDIR", self.dirs.tmp.clone().into());
        set("ANTHROPIC_BASE_URL", self.base_url.clone().into());
        match &self.auth {
            Auth::ApiKey(key) => set("ANTHROPIC_API_KEY", key.into()),
            Auth::Gateway => set("ANTHROPIC_AUTH_TOKEN", gateway_jwt().into()),
        }
        for (k, v) in [
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("DISABLE_BUG_COMMAND", "1"),
            ("CLAUDE_CODE_ENABLE_TELEMETRY", "0"),
            ("IS_SANDBOX", "1"),
        ] {
            set(k, v.into());
        }
        for (k, v) in &self.env {
            env.retain(|(ek, _)| ek != k);
            env.push((k.clone(), v.clone()));
        }
        ClaudeCommand {
            program: self.program.clone(),
            args,
            env,
            cwd: self.dirs.cwd.clone(),
        }
    }
}

/// A fully resolved command: run `program args` in `cwd` with exactly `env`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeCommand {
    /// The `claude` binary.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The whole environment (the parent's is not inherited).
    pub env: Vec<(OsString, OsString)>,
    /// Working directory.
    pub cwd: PathBuf,
}

impl ClaudeCommand {
    /// A `std::process::Command` with a cleared environment. Stdio is left to the caller.
    pub fn to_std(&self) -> std::process::Command {
        let mut c = std::process::Command::new(&self.program);
        c.args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.cwd);
        c
    }

    /// Append this command (its program and arguments) to `wrapper`, a command that runs
    /// another after its own arguments (`agent-watchdog run … --`), with this command's
    /// cleared environment and working directory. Stdio is left to the caller.
    pub fn behind<'c>(
        &self,
        wrapper: &'c mut std::process::Command,
    ) -> &'c mut std::process::Command {
        wrapper
            .arg(&self.program)
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.cwd)
    }

    /// A `tokio::process::Command` with a cleared environment. Stdio is left to the caller.
    pub fn to_tokio(&self) -> tokio::process::Command {
        tokio::process::Command::from(self.to_std())
    }

    /// The value of an environment variable of the command.
    pub fn env_var(&self, key: &str) -> Option<&OsString> {
        self.env.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// Processes (other than the caller) whose environment or command line mentions
/// `dir`, e.g. a session's temp root: the CLI and every tool child it started, even
/// those in their own process group or re-parented to PID 1. Linux only (`/proc`);
/// empty elsewhere. Returns `(pid, command line)`.
pub fn session_processes(dir: &Path) -> Vec<(u32, String)> {
    let needle = dir.as_os_str().as_encoded_bytes();
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let read = |f: &str| std::fs::read(entry.path().join(f)).unwrap_or_default();
        let cmdline = read("cmdline");
        let hit = |hay: &[u8]| !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle);
        if hit(&read("environ")) || hit(&cmdline) {
            let cmd = String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .trim()
                .to_string();
            found.push((pid, cmd));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_matches_rfc4648_vectors() {
        let cases: [(&[u8], &str); 7] = [
            (b"", ""),
            (b"f", "Zg"),
            (b"fo", "Zm8"),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg"),
            (b"fooba", "Zm9vYmE"),
            (b"foobar", "Zm9vYmFy"),
        ];
        for (input, want) in cases {
            assert_eq!(base64url(input), want);
        }
        assert_eq!(base64url(&[0xfb, 0xff, 0xbf]), "-_-_", "url-safe alphabet");
    }

    #[test]
    fn gateway_jwt_has_the_gateway_audience() {
        let jwt = gateway_jwt();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], base64url(br#"{"alg":"none","typ":"JWT"}"#));
        assert!(!jwt.contains('='), "unpadded");
        assert_eq!(
            parts[1],
            "eyJhdWQiOiJjbGF1ZGUtZ2F0ZXdheSIsInN1YiI6Im1vY2siLCJleHAiOjQxMDI0NDQ4MDB9"
        );
    }

    #[test]
    fn command_has_a_cleared_environment_and_the_expected_args() {
        let run = ClaudeRun::new("/bin/claude", "http://127.0.0.1:9", "Say hello.")
            .unwrap()
            .model("mock-model-1")
            .resume("sid-1")
            .env("CLAUDE_CODE_MAX_RETRIES", "0")
            .env("DISABLE_TELEMETRY", "2")
            .arg("--max-turns")
            .arg("3");
        let c = run.command();
        let args: Vec<String> = c
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "-p",
                "Say hello.",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--permission-mode",
                "bypassPermissions",
                "--model",
                "mock-model-1",
                "--resume",
                "sid-1",
                "--max-turns",
                "3",
            ]
        );
        let var = |k: &str| c.env_var(k).map(|v| v.to_string_lossy().into_owned());
        assert_eq!(
            var("ANTHROPIC_BASE_URL").as_deref(),
            Some("http://127.0.0.1:9")
        );
        assert_eq!(var("ANTHROPIC_API_KEY").as_deref(), Some("sk-test"));
        assert_eq!(var("ANTHROPIC_AUTH_TOKEN"), None);
        assert_eq!(var("IS_SANDBOX").as_deref(), Some("1"));
        assert_eq!(var("CLAUDE_CODE_MAX_RETRIES").as_deref(), Some("0"));
        assert_eq!(
            var("DISABLE_TELEMETRY").as_deref(),
            Some("2"),
            "extra env overrides"
        );
        assert_eq!(
            c.env
                .iter()
                .filter(|(k, _)| k == "DISABLE_TELEMETRY")
                .count(),
            1
        );
        assert_eq!(
            var("HOME").map(PathBuf::from).as_deref(),
            Some(run.dirs().home())
        );
        assert_eq!(c.cwd, run.dirs().cwd());
        assert!(
            run.dirs().home().is_dir() && run.dirs().cwd().is_dir() && run.dirs().tmp().is_dir()
        );

        let gw = ClaudeRun::with_dirs("/bin/claude", "http://x", "p", run.dirs().clone())
            .gateway_auth()
            .command();
        assert_eq!(gw.env_var("ANTHROPIC_API_KEY"), None);
        assert_eq!(
            gw.env_var("ANTHROPIC_AUTH_TOKEN").unwrap(),
            gateway_jwt().as_str()
        );
        assert_eq!(gw.cwd, c.cwd, "shared dirs for a resume");

        let std_cmd = c.to_std();
        assert_eq!(std_cmd.get_program(), "/bin/claude");
        assert_eq!(std_cmd.get_envs().count(), c.env.len());
    }

    #[test]
    fn session_processes_finds_a_child_by_its_environment() {
        let dirs = SessionDirs::new().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("HOME", dirs.home())
            .spawn()
            .unwrap();
        // Right after spawn the child may not have exec'd yet: poll (bounded).
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let found = loop {
            let found = session_processes(dirs.root());
            let hit = found
                .iter()
                .any(|(pid, cmd)| *pid == child.id() && cmd.contains("sleep"));
            if hit || std::time::Instant::now() >= until {
                break found;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            found
                .iter()
                .any(|(pid, cmd)| *pid == child.id() && cmd.contains("sleep")),
            "{found:?}"
        );
        assert!(session_processes(dirs.root()).is_empty());
    }

    #[test]
    fn session_dirs_are_removed_with_the_last_reference() {
        let dirs = SessionDirs::new().unwrap();
        let root = dirs.root().to_path_buf();
        let second = dirs.clone();
        drop(dirs);
        assert!(root.is_dir());
        drop(second);
        assert!(!root.exists());
    }
}

//! Running the real OpenAI Codex and opencode CLIs offline: Codex against the Responses-API
//! mock ([`crate::responses`]) through a custom model provider, opencode against the Messages
//! mock unchanged (its Anthropic provider pointed at it).
//!
//! [`find_codex`] and [`find_opencode`] locate the binaries as [`find_claude`] does;
//! [`CodexRun`] and [`OpencodeRun`] build the command line, the (cleared) environment and the
//! configuration files of one run in fresh [`SessionDirs`], as a [`ClaudeCommand`] (a command
//! of any program, whatever its name says).
//!
//! [`find_claude`]: crate::harness::find_claude

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::harness::{repo_root, ClaudeCommand, SessionDirs};

/// The Codex CLI version the project pins (see `scripts/install-other-clis`).
pub const CODEX_VERSION: &str = "0.169.0";
/// The opencode version the project pins (see `scripts/install-other-clis`).
pub const OPENCODE_VERSION: &str = "1.18.33";
/// The command that installs both.
pub const INSTALL_COMMAND: &str = "scripts/install-other-clis";

/// The variables that keep opencode offline and quiet.
const OPENCODE_OFFLINE: [(&str, &str); 4] = [
    ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
    ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
    ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
    ("OPENCODE_DISABLE_SHARE", "1"),
];

/// `$var`, then `<repo>/.tools/<name>/node_modules/.bin/<name>`, then `<name>` on `PATH`; the
/// error says how to install it.
fn find(var: &str, name: &str, package: &str) -> Result<PathBuf, String> {
    crate::harness::check_real_cli_group()?;
    if let Some(bin) = std::env::var_os(var).filter(|b| !b.is_empty()) {
        let bin = PathBuf::from(bin);
        return if bin.is_file() {
            Ok(bin)
        } else {
            Err(format!(
                "{var}={} does not exist; unset it or run `{INSTALL_COMMAND}`",
                bin.display()
            ))
        };
    }
    let mut looked = Vec::new();
    if let Some(root) = repo_root() {
        let local = root
            .join(".tools")
            .join(name)
            .join("node_modules/.bin")
            .join(name);
        if local.is_file() {
            return Ok(local);
        }
        looked.push(local.display().to_string());
    }
    if let Some(path) = std::env::var_os("PATH") {
        if let Some(found) = std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|c| c.is_file())
        {
            return Ok(found);
        }
    }
    looked.push(format!("{name} on PATH"));
    Err(format!(
        "the {name} CLI was not found (looked at: {}). Run `{INSTALL_COMMAND}` to install \
         {package} into .tools/{name}, or set {var}.",
        looked.join(", ")
    ))
}

/// Finds the `codex` binary: `$CODEX_BIN`, then `.tools/codex`, then `PATH`.
pub fn find_codex() -> Result<PathBuf, String> {
    find(
        "CODEX_BIN",
        "codex",
        &format!("@openai/codex@{CODEX_VERSION}"),
    )
}

/// Finds the `opencode` binary: `$OPENCODE_BIN`, then `.tools/opencode`, then `PATH`.
pub fn find_opencode() -> Result<PathBuf, String> {
    find(
        "OPENCODE_BIN",
        "opencode",
        &format!("opencode-ai@{OPENCODE_VERSION}"),
    )
}

/// The `PATH` of a run (ours, or the usual one).
fn path_var() -> OsString {
    std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into())
}

/// Builder for one `codex exec --json` run against a Responses-API mock: its `CODEX_HOME`
/// (in the run's `HOME`) holds a `config.toml` whose model provider is the mock
/// (`wire_api = "responses"`, two retries of a failed request), with no sandbox and no
/// approvals (`exec` asks nobody anyway).
#[derive(Debug, Clone)]
pub struct CodexRun {
    program: PathBuf,
    base_url: String,
    prompt: String,
    resume: Option<String>,
    args: Vec<OsString>,
    dirs: Arc<SessionDirs>,
}

impl CodexRun {
    /// A run of `program` against the mock at `base_url` (`http://127.0.0.1:PORT`) in fresh
    /// directories.
    pub fn new(
        program: impl Into<PathBuf>,
        base_url: impl Into<String>,
        prompt: impl Into<String>,
    ) -> std::io::Result<Self> {
        Ok(CodexRun::with_dirs(
            program,
            base_url,
            prompt,
            SessionDirs::new()?,
        ))
    }

    /// A run in existing directories (to resume an earlier thread).
    pub fn with_dirs(
        program: impl Into<PathBuf>,
        base_url: impl Into<String>,
        prompt: impl Into<String>,
        dirs: Arc<SessionDirs>,
    ) -> Self {
        CodexRun {
            program: program.into(),
            base_url: base_url.into(),
            prompt: prompt.into(),
            resume: None,
            args: Vec::new(),
            dirs,
        }
    }

    /// `codex exec resume <thread_id>`: the thread again.
    pub fn resume(mut self, thread_id: impl Into<String>) -> Self {
        self.resume = Some(thread_id.into());
        self
    }

    /// Append an argument (after `exec`'s own, before the prompt).
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// The run's directories.
    pub fn dirs(&self) -> &Arc<SessionDirs> {
        &self.dirs
    }

    /// `CODEX_HOME` of the run.
    pub fn codex_home(&self) -> PathBuf {
        self.dirs.home().join(".codex")
    }

    /// The config the run reads.
    fn config(&self) -> String {
        format!(
            "model = \"mock-model\"\n\
             model_provider = \"mock\"\n\
             sandbox_mode = \"danger-full-access\"\n\
             approval_policy = \"never\"\n\
             \n\
             [model_providers.mock]\n\
             name = \"mock\"\n\
             base_url = \"{}/v1\"\n\
             wire_api = \"responses\"\n\
             env_key = \"MOCK_KEY\"\n\
             request_max_retries = 2\n\
             stream_max_retries = 2\n",
            self.base_url
        )
    }

    /// Write the run's `config.toml` and return its command (program, arguments, the whole
    /// environment, working directory). Stdin is the caller's: give it `/dev/null`, or
    /// `codex exec` waits for it to end ("Reading additional input from stdin...").
    pub fn command(&self) -> std::io::Result<ClaudeCommand> {
        std::fs::create_dir_all(self.codex_home())?;
        std::fs::write(self.codex_home().join("config.toml"), self.config())?;
        let mut args: Vec<OsString> = ["exec", "--json", "--skip-git-repo-check"]
            .map(OsString::from)
            .to_vec();
        args.extend(self.args.iter().cloned());
        if let Some(id) = &self.resume {
            args.extend(["resume".into(), id.into()]);
        }
        args.push(self.prompt.clone().into());
        let env = vec![
            ("PATH".into(), path_var()),
            ("HOME".into(), self.dirs.home().into()),
            ("TMPDIR".into(), self.dirs.tmp().into()),
            ("CODEX_HOME".into(), self.codex_home().into()),
            ("MOCK_KEY".into(), "sk-mock".into()),
        ];
        Ok(ClaudeCommand {
            program: self.program.clone(),
            args,
            env,
            cwd: self.dirs.cwd().to_path_buf(),
        })
    }
}

/// Builder for one `opencode run --format json` run against a Messages-API mock: the working
/// directory's `opencode.json` points opencode's Anthropic provider at it, and the
/// environment keeps opencode offline (no update, models or LSP download, no sharing).
///
/// opencode asks the API for a title for the session beside the run's own requests, in
/// parallel: a scenario answers it by its text (`Generate a title`), not by position.
#[derive(Debug, Clone)]
pub struct OpencodeRun {
    program: PathBuf,
    base_url: String,
    prompt: String,
    dirs: Arc<SessionDirs>,
}

impl OpencodeRun {
    /// The text of opencode's title request (a scenario answers it with
    /// `Matcher::LastUserTextContains`).
    pub const TITLE_REQUEST: &'static str = "Generate a title for this conversation";

    /// A run of `program` against the mock at `base_url` in fresh directories.
    pub fn new(
        program: impl Into<PathBuf>,
        base_url: impl Into<String>,
        prompt: impl Into<String>,
    ) -> std::io::Result<Self> {
        Ok(OpencodeRun {
            program: program.into(),
            base_url: base_url.into(),
            prompt: prompt.into(),
            dirs: SessionDirs::new()?,
        })
    }

    /// The run's directories.
    pub fn dirs(&self) -> &Arc<SessionDirs> {
        &self.dirs
    }

    /// Write the run's `opencode.json` and return its command. Stdin is the caller's: give it
    /// `/dev/null`, or `opencode run` reads it to its end first.
    pub fn command(&self) -> std::io::Result<ClaudeCommand> {
        let config = serde_json::json!({
            "$schema": "https://opencode.ai/config.json",
            "model": "anthropic/claude-sonnet-4-5",
            "autoupdate": false,
            "share": "disabled",
            "provider": {"anthropic": {"options": {
                "baseURL": format!("{}/v1", self.base_url),
                "apiKey": "sk-test",
            }}},
        });
        std::fs::write(self.dirs.cwd().join("opencode.json"), config.to_string())?;
        let args = ["run", "--format", "json"]
            .map(OsString::from)
            .into_iter()
            .chain([OsString::from(&self.prompt)])
            .collect();
        let mut env: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), path_var()),
            ("HOME".into(), self.dirs.home().into()),
            ("TMPDIR".into(), self.dirs.tmp().into()),
        ];
        env.extend(OPENCODE_OFFLINE.map(|(k, v)| (k.into(), v.into())));
        Ok(ClaudeCommand {
            program: self.program.clone(),
            args,
            env,
            cwd: self.dirs.cwd().to_path_buf(),
        })
    }
}

/// Runs `program --version` and returns its last word (`codex-cli 0.169.0` → `0.169.0`).
pub fn cli_version(program: &Path) -> Result<String, String> {
    let out = std::process::Command::new(program)
        .arg("--version")
        .env_clear()
        .env("PATH", path_var())
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {} --version: {e}", program.display()))?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .last()
        .map(str::to_owned)
        .ok_or_else(|| format!("{} --version printed nothing", program.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_codex_run_has_its_own_home_a_mock_provider_and_the_prompt_last() {
        let run = CodexRun::new("/bin/codex", "http://127.0.0.1:9", "Do it.")
            .unwrap()
            .resume("t-1");
        let c = run.command().unwrap();
        let args: Vec<_> = c.args.iter().map(|a| a.to_string_lossy()).collect();
        assert_eq!(
            args,
            [
                "exec",
                "--json",
                "--skip-git-repo-check",
                "resume",
                "t-1",
                "Do it."
            ]
        );
        let home = c.env_var("CODEX_HOME").unwrap();
        let config = std::fs::read_to_string(Path::new(home).join("config.toml")).unwrap();
        assert!(
            config.contains("base_url = \"http://127.0.0.1:9/v1\""),
            "{config}"
        );
        assert!(config.contains("wire_api = \"responses\""));
        assert_eq!(c.env_var("MOCK_KEY").unwrap(), "sk-mock");
        assert!(c.env_var("OPENAI_API_KEY").is_none());
    }

    #[test]
    fn an_opencode_run_points_its_provider_at_the_mock() {
        let run = OpencodeRun::new("/bin/opencode", "http://127.0.0.1:9", "Do it.").unwrap();
        let c = run.command().unwrap();
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(c.cwd.join("opencode.json")).unwrap()).unwrap();
        assert_eq!(
            config["provider"]["anthropic"]["options"]["baseURL"],
            "http://127.0.0.1:9/v1"
        );
        assert_eq!(c.env_var("OPENCODE_DISABLE_AUTOUPDATE").unwrap(), "1");
        assert_eq!(c.args.last().unwrap(), "Do it.");
    }
}

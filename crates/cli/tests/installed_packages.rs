//! The packages as a new user gets them: `pip install claude-agent-sdk agent-sdk-watchdog` or
//! `npm install @anthropic-ai/claude-agent-sdk agent-sdk-watchdog`, **no other `claude`**, and
//! the documented snippets as written (the SDK drop-in's of `docs/sdk-drop-in.md` and the
//! README, the README's in-process Node and Python ones) and the examples
//! (`examples/node-service/`, `examples/python-worker/`) as a user runs them, against the mock.
//!
//! Run by `scripts/test-packages` only (the target has `test = false` in Cargo.toml, since it
//! needs what that script installs; `cargo test --test installed_packages` runs it), with:
//! - `WATCHDOG_PKG_PYTHON`: the Python of a fresh virtual environment holding the SDK's registry
//!   wheel and our wheel;
//! - `WATCHDOG_PKG_PROJECT`: a fresh npm project holding the SDK (with its platform package) and
//!   our tarballs;
//! - a `PATH` with no `claude`, `claude-watchdog` or `agent-watchdog` and no
//!   `AGENT_WATCHDOG_CLAUDE` / `AGENT_WATCHDOG_BIN` (asserted: the helpers must find all three).
//!
//! A missing prerequisite fails with what is missing, never a skip.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mock_api::agents::PARENT_FINAL;
use mock_api::harness::ClaudeRun;
use mock_api::{AgentScript, BlockingMockServer, CutOffs, Scenario, ScenarioOptions, FINAL_TEXT};
use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sdk {
    TypeScript,
    Python,
}

fn required(var: &str) -> PathBuf {
    let p = std::env::var_os(var)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!("\n\n{var} is not set: these tests run from scripts/test-packages\n")
        });
    assert!(p.exists(), "{var}={} does not exist", p.display());
    p
}

fn python() -> PathBuf {
    required("WATCHDOG_PKG_PYTHON")
}

fn project() -> PathBuf {
    required("WATCHDOG_PKG_PROJECT")
}

#[path = "common/docs.rs"]
mod docs;

const README_DROP_IN: &str = "### SDK drop-in: every `query()` always returns";
const README_NODE: &str = "### In-process Node: the reference package's API";
const README_PYTHON: &str = "### In-process Python";

/// The SDK drop-in snippets in `lang`, each once: the first block of the guide page
/// (`docs/sdk-drop-in.md`, which must have one) and the first of the README's "SDK drop-in"
/// section (if it has one), as (where, code).
fn drop_in_snippets(lang: &str) -> Vec<(String, String)> {
    let guide = docs::read(docs::SDK_DROP_IN);
    let first = docs::blocks(&guide, lang)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{}: no ```{lang} block", docs::SDK_DROP_IN));
    let mut out = vec![(docs::SDK_DROP_IN.to_owned(), first)];
    let readme = docs::read(docs::README);
    let section = docs::section(docs::README, &readme, README_DROP_IN);
    if let Some(code) = docs::blocks(section, lang).into_iter().next() {
        if !out.iter().any(|(_, c)| *c == code) {
            out.push((docs::README.to_owned(), code));
        }
    }
    out
}

/// The first ```` ```lang ```` block of the README's section `heading`.
fn readme_snippet(heading: &str, lang: &str) -> String {
    let readme = docs::read(docs::README);
    let section = docs::section(docs::README, &readme, heading);
    docs::blocks(section, lang)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("README.md: no ```{lang} block under {heading:?}"))
}

/// Asserts the environment a new user has: none of our executables or claude on `PATH`.
fn assert_clean_path(path: &OsString) {
    for dir in std::env::split_paths(path) {
        for name in ["claude", "claude-watchdog", "agent-watchdog"] {
            assert!(
                !dir.join(name).exists(),
                "{} is on PATH: scripts/test-packages strips such directories",
                dir.join(name).display()
            );
        }
    }
    for var in ["AGENT_WATCHDOG_CLAUDE", "AGENT_WATCHDOG_BIN"] {
        assert!(std::env::var_os(var).is_none(), "{var} is set");
    }
}

struct Run {
    out: Output,
    took: Duration,
}

impl Run {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    fn report(&self) -> String {
        format!(
            "status {:?} after {:?}\nstdout:\n{}\nstderr:\n{}",
            self.out.status,
            self.took,
            self.stdout(),
            String::from_utf8_lossy(&self.out.stderr)
        )
    }
}

/// Runs `script` (a file) with `sdk`'s interpreter against `scenario`, in a fresh session
/// environment (the mock's `ANTHROPIC_BASE_URL`, a temporary `HOME`), plus `extra` variables
/// and `path_prefix` before `PATH`; `args` after the script.
fn run_script(
    sdk: Sdk,
    script: &Path,
    args: &[&str],
    server: &BlockingMockServer,
    extra: &[(&str, &str)],
    path_prefix: Option<&Path>,
) -> Run {
    let path = std::env::var_os("PATH").unwrap_or_default();
    assert_clean_path(&path);
    let run = ClaudeRun::new("claude", server.base_url(), "unused").unwrap();
    let cmd = run.command();
    let mut c = match sdk {
        Sdk::TypeScript => Command::new("node"),
        Sdk::Python => Command::new(python()),
    };
    c.arg(script)
        .args(args)
        .env_clear()
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null());
    if let Some(dir) = path_prefix {
        let mut dirs = vec![dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        c.env("PATH", std::env::join_paths(dirs).unwrap());
    }
    for (k, v) in extra {
        c.env(k, v);
    }
    let t = Instant::now();
    let out = c.output().expect("run the script");
    Run {
        out,
        took: t.elapsed(),
    }
}

/// `code` for `sdk`, written where a user would keep it: in the npm project (so its imports
/// resolve), or anywhere for Python.
fn snippet_file(sdk: Sdk, code: &str, dir: &Path) -> PathBuf {
    let p = match sdk {
        Sdk::TypeScript => project().join("doc_snippet.mjs"),
        Sdk::Python => dir.join("doc_snippet.py"),
    };
    fs::write(&p, code).unwrap();
    p
}

/// `file` (a script) run as `sdk`'s user runs it, against the mock's `scenario` (pings
/// every second).
fn mock_run(
    sdk: Sdk,
    file: &Path,
    args: &[&str],
    scenario: &str,
    extra: &[(&str, &str)],
    path_prefix: Option<&Path>,
) -> Run {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let options = ScenarioOptions {
        ping_every: Duration::from_secs(1),
        ..ScenarioOptions::default()
    };
    let server =
        BlockingMockServer::start(Scenario::named_with(scenario, &options).unwrap()).unwrap();
    let r = run_script(sdk, file, args, &server, extra, path_prefix);
    server.shutdown();
    eprintln!("{sdk:?} {}, {scenario}: {:?}", file.display(), r.took);
    r
}

fn snippet_run(
    sdk: Sdk,
    (place, code): &(String, String),
    scenario: &str,
    extra: &[(&str, &str)],
    path_prefix: Option<&Path>,
) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let script = snippet_file(sdk, code, tmp.path());
    let r = mock_run(sdk, &script, &[], scenario, extra, path_prefix);
    eprintln!("(the snippet of {place})");
    r
}

fn lang(sdk: Sdk) -> &'static str {
    match sdk {
        Sdk::TypeScript => "ts",
        Sdk::Python => "python",
    }
}

/// A healthy run of `snippet` ends with the result's text.
fn succeeds(sdk: Sdk, snippet: &(String, String), path_prefix: Option<&Path>) {
    let r = snippet_run(sdk, snippet, "healthy", &[], path_prefix);
    let report = format!("{}: {}", snippet.0, r.report());
    assert!(r.out.status.success(), "{report}");
    let stderr = String::from_utf8_lossy(&r.out.stderr);
    for warning in ["Warning", "CLAUDE_SDK_"] {
        assert!(!stderr.contains(warning), "the SDK warned: {report}");
    }
    let last = r.stdout().lines().last().unwrap_or("").to_owned();
    assert_eq!(last, format!("success: {FINAL_TEXT}"), "{report}");
    assert!(r.took < Duration::from_secs(120), "{report}");
}

fn healthy(sdk: Sdk, path_prefix: Option<&Path>) {
    for snippet in drop_in_snippets(lang(sdk)) {
        succeeds(sdk, &snippet, path_prefix);
    }
}

fn ping_only_stall(sdk: Sdk) {
    // The snippet sets `idle` only: the rest of the policy comes from the environment.
    for snippet in drop_in_snippets(lang(sdk)) {
        let r = snippet_run(
            sdk,
            &snippet,
            "ping_only_stall",
            &[
                ("AGENT_WATCHDOG_NO_PROGRESS", "12s"),
                ("AGENT_WATCHDOG_EXTEND_FACTOR", "1"),
                ("AGENT_WATCHDOG_GRACE", "3s"),
            ],
            None,
        );
        let report = format!("{}: {}", snippet.0, r.report());
        // The snippet reads the kill through the helper and ends normally.
        assert!(r.out.status.success(), "{report}");
        let stdout = r.stdout();
        let line = stdout.lines().last().unwrap_or("");
        let prefix = "stopped by the watchdog (no_progress): ";
        assert!(line.starts_with(prefix), "{report}");
        assert!(
            line[prefix.len()..].starts_with("agent-watchdog killed")
                && line.contains("(no_progress)"),
            "the reason is our sentence: {report}"
        );
        assert!(r.took < Duration::from_secs(90), "{report}");
    }
}

#[test]
fn drop_in_python_snippet_healthy_run_succeeds() {
    healthy(Sdk::Python, None);
}

#[test]
fn drop_in_python_snippet_ping_only_stall_reads_our_result() {
    ping_only_stall(Sdk::Python);
}

#[test]
fn drop_in_typescript_snippet_healthy_run_succeeds() {
    healthy(Sdk::TypeScript, None);
}

#[test]
fn drop_in_typescript_snippet_ping_only_stall_reads_our_result() {
    ping_only_stall(Sdk::TypeScript);
}

/// The README's in-process Node snippet (the reference API), as written: the SDK's own claude.
#[test]
fn readme_in_process_node_snippet_healthy_run_succeeds() {
    let code = readme_snippet(README_NODE, "js");
    succeeds(
        Sdk::TypeScript,
        &("README.md (Node)".to_owned(), code),
        None,
    );
}

/// The README's in-process Python snippet, as written.
#[test]
fn readme_in_process_python_snippet_healthy_run_succeeds() {
    let code = readme_snippet(README_PYTHON, "python");
    succeeds(Sdk::Python, &("README.md (Python)".to_owned(), code), None);
}

/// An example of `examples/`, copied where its user keeps it: `examples/node-service/` into
/// the npm project (so its imports resolve), `examples/python-worker/` anywhere.
fn example(sdk: Sdk, dir: &Path) -> PathBuf {
    let (name, file, into) = match sdk {
        Sdk::TypeScript => ("node-service", "service.mjs", project().join("examples")),
        Sdk::Python => ("python-worker", "worker.py", dir.to_path_buf()),
    };
    let from = docs::root().join("examples").join(name).join(file);
    let to = into.join(name);
    fs::create_dir_all(&to).unwrap();
    fs::copy(&from, to.join(file)).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    to.join(file)
}

/// The example's job lines (JSON) and its last line (the watchdog's counts).
fn example_output(r: &Run) -> (Vec<Value>, String) {
    let stdout = r.stdout();
    let jobs = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (jobs, stdout.lines().last().unwrap_or("").to_owned())
}

#[test]
fn node_service_example_runs_a_healthy_job() {
    let tmp = tempfile::tempdir().unwrap();
    let service = example(Sdk::TypeScript, tmp.path());
    let r = mock_run(
        Sdk::TypeScript,
        &service,
        &["Say hello."],
        "healthy",
        &[],
        None,
    );
    let (jobs, counts) = example_output(&r);
    assert!(r.out.status.success(), "{}", r.report());
    assert_eq!(
        jobs,
        [serde_json::json!({"prompt": "Say hello.", "outcome": "success", "result": FINAL_TEXT})],
        "{}",
        r.report()
    );
    assert_eq!(
        counts,
        "watchdog: 1 succeeded, 0 killed idle, 0 at the ceiling",
        "{}",
        r.report()
    );
}

#[test]
fn node_service_example_reports_a_stalled_job_killed_idle() {
    let tmp = tempfile::tempdir().unwrap();
    let service = example(Sdk::TypeScript, tmp.path());
    let r = mock_run(
        Sdk::TypeScript,
        &service,
        &["Say hello."],
        "headers_only_stall",
        &[("WATCHDOG_IDLE_MS", "1500")],
        None,
    );
    let (jobs, counts) = example_output(&r);
    assert_eq!(r.out.status.code(), Some(1), "{}", r.report());
    assert_eq!(jobs.len(), 1, "{}", r.report());
    assert_eq!(jobs[0]["outcome"], "killed", "{}", r.report());
    assert_eq!(jobs[0]["kill"], "watchdog_idle", "{}", r.report());
    // No write yet: the reference's pre-write extension doubles the patience (3 s), and the
    // kill is not a 30-second tick late.
    let after = jobs[0]["afterMs"].as_f64().unwrap_or(0.0);
    assert!((3000.0..30_000.0).contains(&after), "{}", r.report());
    assert_eq!(
        counts,
        "watchdog: 0 succeeded, 1 killed idle, 0 at the ceiling",
        "{}",
        r.report()
    );
    assert!(r.took < Duration::from_secs(90), "{}", r.report());
}

#[test]
fn python_worker_example_runs_a_healthy_job() {
    let tmp = tempfile::tempdir().unwrap();
    let worker = example(Sdk::Python, tmp.path());
    let r = mock_run(Sdk::Python, &worker, &["Say hello."], "healthy", &[], None);
    let (jobs, counts) = example_output(&r);
    assert!(r.out.status.success(), "{}", r.report());
    assert_eq!(
        jobs,
        [serde_json::json!({"prompt": "Say hello.", "outcome": "success", "result": FINAL_TEXT})],
        "{}",
        r.report()
    );
    assert_eq!(
        counts,
        "watchdog: 1 succeeded, 0 killed idle, 0 killed without progress",
        "{}",
        r.report()
    );
}

#[test]
fn python_worker_example_reports_a_stalled_job_killed_idle() {
    let tmp = tempfile::tempdir().unwrap();
    let worker = example(Sdk::Python, tmp.path());
    let r = mock_run(
        Sdk::Python,
        &worker,
        &["Say hello."],
        "headers_only_stall",
        &[("WATCHDOG_IDLE", "1.5s")],
        None,
    );
    let (jobs, counts) = example_output(&r);
    assert_eq!(r.out.status.code(), Some(1), "{}", r.report());
    assert_eq!(jobs.len(), 1, "{}", r.report());
    assert_eq!(jobs[0]["outcome"], "killed", "{}", r.report());
    assert_eq!(jobs[0]["kill"], "idle", "{}", r.report());
    assert!(
        jobs[0]["reason"].as_str().is_some_and(|s| !s.is_empty()),
        "{}",
        r.report()
    );
    assert_eq!(
        counts,
        "watchdog: 0 succeeded, 1 killed idle, 0 killed without progress",
        "{}",
        r.report()
    );
    assert!(r.took < Duration::from_secs(90), "{}", r.report());
}

/// A `claude` of another version first on `PATH`: the helpers still run the SDK's own (the
/// fake one fails every run and says so).
fn mismatch(sdk: Sdk) {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("claude");
    fs::write(
        &fake,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '1.0.0 (Claude Code)'; exit 0; fi\n\
         echo 'the fake claude on PATH ran' >&2\nexit 3\n",
    )
    .unwrap();
    let mut perms = fs::metadata(&fake).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    fs::set_permissions(&fake, perms).unwrap();
    healthy(sdk, Some(dir.path()));
}

#[test]
fn python_helper_runs_the_sdks_claude_not_another_on_path() {
    mismatch(Sdk::Python);
}

#[test]
fn typescript_helper_runs_the_sdks_claude_not_another_on_path() {
    mismatch(Sdk::TypeScript);
}

/// What a scan of every process's command line and environment saw while `child` ran.
#[derive(Default, Debug)]
struct Scan {
    rounds: usize,
    claude_seen: bool,
    on_cmdline: Vec<String>,
    in_env_of: Vec<String>,
}

fn cmdline(pid: &str) -> String {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

fn scan_while(child: &mut std::process::Child, secret: &str, claude: &str) -> Scan {
    let mut scan = Scan::default();
    let t = Instant::now();
    loop {
        let done = child.try_wait().unwrap().is_some();
        scan.rounds += 1;
        for e in fs::read_dir("/proc").unwrap().flatten() {
            let pid = e.file_name().to_string_lossy().into_owned();
            if !pid.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let line = cmdline(&pid);
            if line.starts_with(claude) {
                scan.claude_seen = true;
            }
            if line.contains(secret) && !scan.on_cmdline.contains(&line) {
                scan.on_cmdline.push(line.clone());
            }
            let env = fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            if String::from_utf8_lossy(&env).contains(&format!("PROBE_SECRET={secret}"))
                && !scan.in_env_of.contains(&line)
            {
                scan.in_env_of.push(line);
            }
        }
        if done {
            return scan;
        }
        if t.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mcp_run(delivery: &str) -> (Scan, Value, String) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = std::env::var_os("PATH").unwrap_or_default();
    assert_clean_path(&path);
    let modules = project().join("node_modules");
    let claude = modules.join("@anthropic-ai/claude-agent-sdk-linux-x64/claude");
    assert!(
        claude.is_file(),
        "the SDK's platform package is not installed: {}",
        claude.display()
    );
    let secret = format!("probe-secret-{}", std::process::id());
    let server = BlockingMockServer::start(Scenario::named("healthy").unwrap()).unwrap();
    let run = ClaudeRun::new("claude", server.base_url(), "unused").unwrap();
    let cmd = run.command();
    let tests = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk");
    let mut child = Command::new("node")
        .arg(tests.join("mcp_query.mjs"))
        .env_clear()
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("SDK_NODE_MODULES", &modules)
        .env("MCP_SERVER", tests.join("mcp_server.mjs"))
        .env("PROBE_VALUE", &secret)
        .env("DELIVERY", delivery)
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The pipes are small: drain them on threads while scanning.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let so = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut so, &mut s).unwrap();
        s
    });
    let se = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut se, &mut s).unwrap();
        s
    });
    let scan = scan_while(&mut child, &secret, &claude.to_string_lossy());
    let (stdout, stderr) = (so.join().unwrap(), se.join().unwrap());
    server.shutdown();
    let done: Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no report: {stdout}\nstderr: {stderr}"));
    eprintln!("mcp delivery '{delivery}': {scan:?} {done}");
    (scan, done, stderr)
}

#[test]
fn typescript_mcp_server_secrets_stay_off_every_command_line() {
    let (scan, done, stderr) = mcp_run("");
    let report = format!("{scan:?}\n{done}\nstderr: {stderr}");
    assert!(done["error"].is_null(), "{report}");
    assert_eq!(done["result"]["subtype"], "success", "{report}");
    assert!(
        done["mcp"].to_string().contains("\"connected\""),
        "the MCP server was delivered and connected: {report}"
    );
    assert!(scan.claude_seen, "the SDK's own claude ran: {report}");
    assert!(
        scan.in_env_of.iter().any(|l| l.contains("mcp_server.mjs")),
        "the server process got its secret from its config: {report}"
    );
    assert!(
        scan.on_cmdline.is_empty(),
        "the secret is on a command line: {report}"
    );
    assert!(
        !stderr.contains("CLAUDE_SDK_MCP_SERVERS_ARGV_DEPRECATED"),
        "{report}"
    );
}

/// The control: without the helper's `mcpServersDelivery` (as before it set one) the same scan
/// sees the secret on the drop-in's and claude's command lines, and the SDK warns.
#[test]
fn typescript_mcp_scan_sees_a_secret_on_the_command_line_without_the_delivery() {
    let (scan, done, stderr) = mcp_run("unset");
    let report = format!("{scan:?}\n{done}\nstderr: {stderr}");
    assert!(done["error"].is_null(), "{report}");
    assert!(
        scan.on_cmdline
            .iter()
            .any(|l| l.contains("claude-watchdog") && l.contains("--mcp-config")),
        "{report}"
    );
    assert!(
        stderr.contains("CLAUDE_SDK_MCP_SERVERS_ARGV_DEPRECATED"),
        "{report}"
    );
}

/// A subagent cut off by the output limit, continued once by the plugin the helper loads from
/// the installed package, its hook the packaged `agent-watchdog` (none on `PATH`).
fn subagent_continued_once(sdk: Sdk) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = std::env::var_os("PATH").unwrap_or_default();
    assert_clean_path(&path);
    let state = tempfile::tempdir().unwrap();
    let server = BlockingMockServer::start(Scenario::agents(
        "agents",
        AgentScript {
            cut_offs: CutOffs::Always,
            cut_offs_after_continue: CutOffs::Times(0),
            ..AgentScript::default()
        },
    ))
    .unwrap();
    let run = ClaudeRun::new("claude", server.base_url(), "unused")
        .unwrap()
        .env("AGENT_WATCHDOG_STATE_DIR", state.path());
    let cmd = run.command();
    let tests = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk");
    let (mut c, installed) = match sdk {
        Sdk::TypeScript => {
            let mut c = Command::new("node");
            c.arg(tests.join("plugin_query.mjs"));
            (c, project().join("node_modules/agent-sdk-watchdog/plugin"))
        }
        Sdk::Python => {
            let mut c = Command::new(python());
            c.arg(tests.join("plugin_query.py"));
            let out = Command::new(python())
                .args([
                    "-c",
                    "import agent_sdk_watchdog as w; print(w.plugin_path())",
                ])
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            let p = String::from_utf8(out.stdout).unwrap().trim().to_owned();
            (c, PathBuf::from(p))
        }
    };
    let t = Instant::now();
    let out = c
        .env_clear()
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("SDK_NODE_MODULES", project().join("node_modules"))
        .env("WATCHDOG_HELPER", "1")
        .env("PROMPT", "Delegate the widget report.")
        .env("WORK_DIR", &cmd.cwd)
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = format!(
        "{sdk:?} after {:?}: {stdout}\nstderr: {}",
        t.elapsed(),
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let done = events
        .iter()
        .find(|e| e["event"] == "done")
        .unwrap_or_else(|| panic!("{report}"));
    assert!(done["error"].is_null(), "{report}");
    let plugins = events
        .iter()
        .find(|e| e["subtype"] == "init")
        .map(|e| e["plugins"].to_string())
        .unwrap_or_default();
    assert!(plugins.contains("agent-watchdog-subagents"), "{report}");
    assert!(
        plugins.contains(&*installed.to_string_lossy()),
        "the plugin is the installed package's ({}): {report}",
        installed.display()
    );
    let mut agents: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|r| r.summary.as_ref()?.agent_id.clone())
        .collect();
    agents.sort();
    agents.dedup();
    assert_eq!(agents.len(), 1, "{report}");
    let sent: Vec<String> = events
        .iter()
        .filter(|e| e["top_level"] == true)
        .flat_map(|e| e["send_to"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    assert_eq!(sent, agents, "continued exactly once: {report}");
    let last = events
        .iter()
        .rev()
        .find(|e| e["type"] == "result")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(last["is_error"], false, "{report}");
    assert!(
        last["result"]
            .as_str()
            .unwrap_or("")
            .starts_with(PARENT_FINAL),
        "{report}"
    );
    let continued = fs::read_dir(state.path().join("subagents/continued"))
        .map(|d| {
            d.flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(continued, 1, "one continue-once marker: {report}");
    server.shutdown();
}

#[test]
fn python_packaged_plugin_continues_a_cut_off_subagent_once() {
    subagent_continued_once(Sdk::Python);
}

#[test]
fn typescript_packaged_plugin_continues_a_cut_off_subagent_once() {
    subagent_continued_once(Sdk::TypeScript);
}

/// A bad limit is one line naming the option and the value, exit 2, no query started.
#[test]
fn the_examples_say_a_bad_limit_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    for (sdk, var, said) in [
        (
            Sdk::TypeScript,
            "WATCHDOG_IDLE_MS",
            "node-service: idleMs must be a number > 0, got NaN",
        ),
        (
            Sdk::Python,
            "WATCHDOG_IDLE",
            "python-worker: idle must be a duration such as 90s, 10m, 1h30m or 250ms, at most 365d, got \"soon\"",
        ),
    ] {
        let file = example(sdk, tmp.path());
        let r = mock_run(sdk, &file, &["Say hello."], "healthy", &[(var, "soon")], None);
        assert_eq!(r.out.status.code(), Some(2), "{}", r.report());
        assert_eq!(r.stdout(), "", "{}", r.report());
        assert_eq!(
            String::from_utf8_lossy(&r.out.stderr),
            format!("{said}\n"),
            "{}",
            r.report()
        );
    }
}

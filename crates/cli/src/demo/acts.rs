//! `agent-watchdog demo`: the watchdog at work on a real `claude`, offline, in under a minute.
//!
//! It starts the embedded mock of the Messages API (loopback only) three times and runs a
//! real `claude -p` against it under `run` with small thresholds: a healthy run with a tool
//! call, a run that goes silent after its tool result (killed `idle`), and a run whose gateway
//! only sends keep-alive pings (killed `no_progress`). After each run it replays the recorded
//! capture to show the timeline the watchdog saw.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, ScenarioOptions};
use serde_json::Value;

use super::args::DemoArgs;
use crate::exit_code;
use crate::policy_args::PolicyArgs;
use crate::replay::{replay_reader, write_human};
use crate::run::{execute, Mode, RunConfig};

struct Act {
    scenario: &'static str,
    title: &'static str,
    story: &'static str,
    flags: &'static [(&'static str, &'static str)],
    expect: &'static str,
}

const ACTS: &[Act] = &[
    Act {
        scenario: "tool_then_answer",
        title: "a healthy run",
        story: "The model writes a file with the Write tool, gets the tool result, and answers.",
        flags: &[("idle", "5s"), ("no-progress", "20s")],
        expect: "success",
    },
    Act {
        scenario: "silent_after_tool_result",
        title: "silent after its tool result",
        story: "The model writes a file; then the API stream stalls mid-answer and nothing \
                more arrives: claude itself would wait 300 s before retrying.",
        flags: &[
            ("idle", "3s"),
            ("extend-factor", "1"),
            ("no-progress", "20s"),
        ],
        expect: "idle",
    },
    Act {
        scenario: "ping_only_stall",
        title: "a gateway that only sends pings",
        story: "The API starts an answer, then only sends keep-alive pings: claude stays \
                'alive' (ping frames every ~10 s) but nothing moves.",
        flags: &[
            ("idle", "25s"),
            ("extend-factor", "1"),
            ("no-progress", "14s"),
        ],
        expect: "no_progress",
    },
];

fn policy(flags: &[(&str, &str)]) -> Result<PolicyArgs, String> {
    #[derive(clap::Parser)]
    #[command(no_binary_name = true)]
    struct P {
        #[command(flatten)]
        p: PolicyArgs,
    }
    let args: Vec<String> = flags
        .iter()
        .flat_map(|(k, v)| [format!("--{k}"), (*v).to_string()])
        .chain(["--grace".into(), "3s".into()])
        .collect();
    <P as clap::Parser>::try_parse_from(args)
        .map(|p| p.p)
        .map_err(|e| e.to_string())
}

/// Run `demo`; returns the exit code (0 when every act ended as shown, 1 otherwise).
pub fn main(args: DemoArgs) -> i32 {
    let found = match &args.claude {
        Some(bin) if bin.is_file() => Ok(bin.clone()),
        Some(bin) => Err(format!(
            "{} does not exist; install the pinned CLI with `{}`",
            bin.display(),
            mock_api::harness::INSTALL_COMMAND
        )),
        None => find_claude(),
    };
    let claude = match found {
        Ok(c) => c,
        Err(e) => {
            eprintln!("agent-watchdog demo: {e}");
            return exit_code::INTERNAL;
        }
    };
    let out = &mut std::io::stdout();
    let t0 = Instant::now();
    let _ = writeln!(
        out,
        "agent-watchdog demo: three short sessions of the real claude ({}) against a local mock \
         of the Messages API (127.0.0.1 only), each under the watchdog.\n",
        claude.display()
    );
    let mut all_ok = true;
    for (i, act) in ACTS.iter().enumerate() {
        match run_act(i + 1, act, &claude, out) {
            Ok(ok) => all_ok &= ok,
            Err(e) => {
                eprintln!("agent-watchdog demo: {e}");
                return exit_code::INTERNAL;
            }
        }
    }
    let _ = writeln!(
        out,
        "Done in {:.0} s. Every session ended, each for a reason you can read. Try it on your \
         own runs:\n  agent-watchdog run --record run.capture.jsonl -- claude -p \"…\" \
         --output-format stream-json --verbose --include-partial-messages\n  agent-watchdog \
         replay run.capture.jsonl --idle 2m",
        t0.elapsed().as_secs_f64()
    );
    if all_ok {
        0
    } else {
        exit_code::INTERNAL
    }
}

fn run_act(
    n: usize,
    act: &Act,
    claude: &std::path::Path,
    out: &mut impl Write,
) -> Result<bool, String> {
    let flags_text: Vec<String> = act
        .flags
        .iter()
        .map(|(k, v)| format!("--{k} {v}"))
        .collect();
    let _ = writeln!(out, "── {n}/3 {} ({})", act.title, act.scenario);
    let _ = writeln!(out, "   {}", act.story);
    let _ = writeln!(out, "   policy: {}", flags_text.join(" "));
    let _ = out.flush();
    let policy = policy(act.flags)?;
    let limits = policy.limits();
    let options = ScenarioOptions {
        ping_every: Duration::from_secs(1),
        ..ScenarioOptions::default()
    };
    let scenario = Scenario::named_with(act.scenario, &options)
        .ok_or_else(|| format!("unknown scenario {}", act.scenario))?;
    let server =
        BlockingMockServer::start(scenario).map_err(|e| format!("cannot start the mock: {e}"))?;
    let run = ClaudeRun::new(
        claude,
        server.base_url(),
        "Write hello.txt, then say hello.",
    )
    .map_err(|e| format!("cannot create a temporary HOME: {e}"))?;
    let cmd = run.command();
    let dir = run.dirs().root().to_path_buf();
    let capture = dir.join("demo.capture.jsonl");
    let summary = dir.join("demo.summary.json");
    let mut argv: Vec<OsString> = vec![cmd.program.clone().into_os_string()];
    argv.extend(cmd.args.iter().cloned());
    let started = Instant::now();
    let code = execute(RunConfig {
        limits: limits.clone(),
        grace: policy.grace(),
        summary: Some(summary.clone()),
        record: Some(capture.clone()),
        emit_result: false,
        strict: false,
        status: false,
        hint: false,
        mode: Mode::Run,
        argv,
        env: Some(cmd.env.clone()),
        cwd: Some(cmd.cwd.clone()),
        quiet_stdout: true,
        command_lines: Default::default(),
    });
    let took = started.elapsed();
    server.shutdown();
    let s: Value = std::fs::read(&summary)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    // What the watchdog saw, from the recording.
    let verdict = std::fs::File::open(&capture)
        .and_then(|f| replay_reader(f, limits.clone()))
        .map_err(|e| format!("cannot read the capture: {e}"))?;
    let mut timeline = Vec::new();
    let _ = write_human(&verdict, "the recording", &limits, &mut timeline);
    for line in String::from_utf8_lossy(&timeline).lines().skip(1) {
        let _ = writeln!(out, "   │ {line}");
    }
    let got = match s["kill"]["kind"].as_str() {
        Some(kind) => kind.to_string(),
        None => s["outcome"].as_str().unwrap_or("unknown").to_string(),
    };
    let ok = got == act.expect;
    let _ = writeln!(
        out,
        "   → {} in {:.1} s, exit code {code}{}\n",
        match s["kill"]["kind"].as_str() {
            Some(kind) => format!("killed ({kind})"),
            None => format!("ended by itself: {}", s["outcome"].as_str().unwrap_or("?")),
        },
        took.as_secs_f64(),
        if ok { "" } else { "  (unexpected!)" },
    );
    let _ = std::fs::remove_file(PathBuf::from(&capture));
    Ok(ok)
}

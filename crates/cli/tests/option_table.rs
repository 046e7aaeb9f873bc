//! The option table (`agent_watchdog::options`) is the one list of options: the
//! command line is built from it, and the guide's tables (`docs/cli.md`), every variable the
//! README and the guide name, and the helper calls the READMEs and the guide show must say what
//! it says. (The Python and npm helpers do not restate it: they call the table through the
//! bindings, `watchdog_host::options::env_for`.) Each failure names the option and the file
//! that differs.

use std::collections::BTreeSet;

use clap::CommandFactory;

use agent_watchdog::cli::Cli;
use agent_watchdog::options::{self, OptionSpec, Reader, ValueKind};

#[path = "common/docs.rs"]
mod docs;

use docs::{read as repo_file, CLI};

/// The option of the table read from `env`, or a failure naming `file`.
fn option_of_env(file: &str, env: &str) -> &'static OptionSpec {
    options::by_env(env)
        .unwrap_or_else(|| panic!("{file} names {env}, which the option table does not have"))
}

/// Every `AGENT_WATCHDOG_<NAME>` a text names is an option of the table.
fn every_variable_is_an_option(file: &str, text: &str) -> usize {
    let mut seen = 0;
    for (i, _) in text.match_indices(options::ENV_PREFIX) {
        let rest = &text[i + options::ENV_PREFIX.len()..];
        let len = rest
            .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
            .unwrap_or(rest.len());
        let name = rest[..len].trim_end_matches('_');
        if name.is_empty() {
            continue; // the prefix itself (`AGENT_WATCHDOG_*`, a template)
        }
        let env = format!("{}{name}", options::ENV_PREFIX);
        if env == agent_watchdog::drop_in::DROP_IN_PID_VAR {
            continue; // internal: set by the drop-in for the claude it runs
        }
        option_of_env(file, &env);
        seen += 1;
    }
    seen
}

fn default_values(o: &OptionSpec) -> String {
    o.default_value().unwrap_or_default().to_owned()
}

#[test]
fn the_command_line_is_the_table() {
    let cli = Cli::command();
    let subcommands = [
        ("run", Reader::Run),
        ("replay", Reader::ReplayAudit),
        ("audit", Reader::ReplayAudit),
    ];
    for (sub, reader) in subcommands {
        let cmd = cli.find_subcommand(sub).unwrap();
        for arg in cmd.get_arguments() {
            let Some(env) = arg.get_env() else { continue };
            let env = env.to_str().unwrap();
            let o = option_of_env(&format!("`{sub}`"), env);
            let flag = arg.get_long().map(|l| format!("--{l}"));
            assert_eq!(arg.get_long(), o.flag, "`{sub}`: the flag of {env}");
            assert!(
                o.is_read_by(reader),
                "`{sub}` reads {env}; the table says not"
            );
            let defaults: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            assert_eq!(
                defaults.join(","),
                default_values(o),
                "`{sub} {flag:?}`: the default"
            );
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            assert!(
                help.starts_with(o.help),
                "`{sub} {flag:?}`: the help {help:?}"
            );
            let value_name = arg.get_value_names().map(|v| v[0].to_string());
            if o.kind != ValueKind::Switch {
                assert_eq!(value_name.as_deref(), o.value_name, "`{sub} {flag:?}`");
            }
        }
        for o in options::OPTIONS.iter().filter(|o| o.is_read_by(reader)) {
            assert!(
                cmd.get_arguments()
                    .any(|a| a.get_long() == o.flag && a.get_env() == Some(o.env.as_ref())),
                "the table says `{sub}` reads {} (--{:?}); it has no such flag",
                o.env,
                o.flag
            );
        }
    }
}

/// The cells of the rows of the table of `docs/cli.md` whose header starts with `header`.
fn guide_table(text: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(header));
    assert!(lines.next().is_some(), "{CLI}: no table headed {header:?}");
    lines
        .skip(1) // |---|
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            cells[1..cells.len() - 1]
                .iter()
                .map(|c| c.to_string())
                .collect()
        })
        .collect()
}

fn unquote(cell: &str) -> String {
    cell.replace('`', "")
}

/// The words of a "read by" cell, as the table's readers.
fn readers(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|w| match w {
            "replay" | "audit" => "replay/audit".to_owned(),
            w => w.to_owned(),
        })
        .collect()
}

fn reader_words(o: &OptionSpec) -> BTreeSet<String> {
    o.read_by
        .iter()
        .map(|r| match r {
            Reader::Run => "run",
            Reader::ReplayAudit => "replay/audit",
            Reader::DropIn => "claude-watchdog",
            Reader::Hook => "hook",
            Reader::Telemetry => "telemetry",
            _ => "an unknown reader",
        })
        .map(String::from)
        .collect()
}

#[test]
fn the_guide_tables_are_the_table() {
    let text = repo_file(CLI);
    let rows = guide_table(&text, "| flag | variable | default | read by |");
    for o in options::OPTIONS {
        let row = rows
            .iter()
            .find(|r| unquote(&r[1]) == o.env)
            .unwrap_or_else(|| panic!("{CLI}: the options table has no row for {}", o.env));
        let flag = o.flag.map_or("(none)".to_owned(), |f| format!("--{f}"));
        assert_eq!(unquote(&row[0]), flag, "{CLI}: the flag of {}", o.env);
        assert_eq!(
            unquote(&row[2]),
            o.default_text(),
            "{CLI}: the default of {flag} ({})",
            o.env
        );
        assert_eq!(
            readers(&row[3]),
            reader_words(o),
            "{CLI}: who reads {}",
            o.env
        );
    }
    for row in &rows {
        option_of_env(CLI, &unquote(&row[1]));
    }
    assert_eq!(rows.len(), options::OPTIONS.len(), "{CLI}: a row twice");

    // The policy table states the same defaults.
    let policy = guide_table(&text, "| flag | default | rule |");
    assert!(
        policy.len() >= 10,
        "{CLI}: the policy table has {}",
        policy.len()
    );
    for row in policy {
        let flag = unquote(&row[0]);
        let o = options::by_flag(flag.trim_start_matches("--"))
            .unwrap_or_else(|| panic!("{CLI}: the policy table names {flag}, no option"));
        assert_eq!(
            unquote(&row[1]),
            o.default_text(),
            "{CLI}: the policy table's default of {flag}"
        );
    }
    assert!(every_variable_is_an_option(CLI, &text) >= options::OPTIONS.len());
}

#[test]
fn every_variable_the_readme_and_the_guide_name_is_an_option() {
    let pages = docs::pages();
    assert!(
        pages.len() >= 10,
        "the README and the guide: {}",
        pages.len()
    );
    for (file, text) in &pages {
        every_variable_is_an_option(file, text);
    }
}

/// The `key=value` (Python) or `key: value` (TypeScript) pairs of every call of `call` in
/// `text`, up to its closing bracket `end`.
fn call_arguments(text: &str, call: &str, sep: char, end: char) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(call) {
        let rest = &text[i + call.len()..];
        let args = &rest[..rest.find(end).unwrap_or(rest.len())];
        for pair in args.split(',') {
            let Some((key, value)) = pair.split_once(sep) else {
                continue;
            };
            let key = key.trim();
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            out.push((key.to_owned(), value.trim().to_owned()));
        }
    }
    out
}

#[test]
fn the_documented_helper_calls_name_options_with_valid_values() {
    let extras = ["env", "plugin", "plugins", "from"];
    let mut files: Vec<String> = docs::pages().into_iter().map(|(p, _)| p).collect();
    files.extend(
        [
            "packaging/python/README.md",
            "packaging/npm/agent-sdk-watchdog/README.md",
        ]
        .map(String::from),
    );
    let mut seen = 0;
    for file in &files {
        let text = repo_file(file);
        let calls = [
            call_arguments(&text, "sdk_options(", '=', ')'),
            call_arguments(&text, "watchdogOptions({", ':', '}'),
        ];
        for (key, value) in calls.concat() {
            if extras.contains(&options::snake_case(&key).as_str()) {
                continue;
            }
            // The value as the helper gets it: a number, or the text of a string.
            let text = value.trim_matches(|c| c == '"' || c == '\'');
            let value = match value.parse::<f64>() {
                Ok(n) => serde_json::json!(n),
                Err(_) => serde_json::json!(text),
            };
            let policy = serde_json::json!({ key.clone(): value });
            // What the helpers do with it: the table's rule, through the bindings.
            if let Err(e) = options::env_for(policy.as_object().unwrap()) {
                panic!("{file}: a helper call sets {key}: {e}");
            }
            seen += 1;
        }
    }
    assert!(seen >= 5, "saw {seen} documented helper arguments");
}

//! The option table (`agent_watchdog::options`) is the one list of options: the
//! command line is built from it, and the guide's tables (`docs/cli.md`), every variable the
//! README and the guide name, and the Python and npm helpers must say what it says. Each
//! failure names the option and the file that differs.

use std::collections::BTreeSet;

use clap::CommandFactory;

use agent_watchdog::cli::Cli;
use agent_watchdog::options::{self, OptionSpec, Reader, ValueKind};

#[path = "common/docs.rs"]
mod docs;

use docs::{read as repo_file, CLI};

const PYTHON: &str = "packaging/python/python/agent_sdk_watchdog/__init__.py";
const NPM_JS: &str = "packaging/npm/agent-sdk-watchdog/index.js";
const NPM_TYPES: &str = "packaging/npm/agent-sdk-watchdog/index.d.ts";

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

/// The parameters of the Python function `name` (keyword-only, one a line), in order.
fn python_params(source: &str, name: &str) -> Vec<String> {
    let start = source
        .find(&format!("def {name}("))
        .unwrap_or_else(|| panic!("{PYTHON}: no def {name}("));
    let body = &source[start..];
    let end = body.find(") ->").unwrap();
    body[..end]
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != "*,")
        .map(|l| l.split(':').next().unwrap().to_owned())
        .collect()
}

/// What a helper's converter makes of a value, as the table's kinds it fits.
fn fits(converter: &str, kind: ValueKind) -> bool {
    match converter {
        "positive duration" => kind == ValueKind::PositiveDuration,
        "duration >= 0" => kind == ValueKind::Duration,
        "number" => matches!(
            kind,
            ValueKind::Factor | ValueKind::Fraction | ValueKind::NonZeroFraction
        ),
        // Written as the text given: a path, or the ledger's URL.
        "path" => matches!(kind, ValueKind::Path | ValueKind::LedgerUrl),
        "list" => kind == ValueKind::List,
        _ => false,
    }
}

#[test]
fn the_python_helper_is_the_table() {
    let source = repo_file(PYTHON);
    let body = &source[source.find("def watchdog_env(").unwrap()..];
    let body = &body[..body.find("\ndef ").unwrap()];
    let params = python_params(&source, "watchdog_env");
    assert!(params.len() >= 10, "{PYTHON}: watchdog_env has {params:?}");
    for name in &params {
        let o = options::find(name)
            .unwrap_or_else(|| panic!("{PYTHON}: watchdog_env({name}=) is no option of the table"));
        // The session's environment: the drop-in reads it, and the plugin's hook it loads.
        assert!(
            o.is_read_by(Reader::DropIn) || o.is_read_by(Reader::Hook),
            "{PYTHON}: {name} is neither the drop-in's nor the hook's"
        );
        // Where the helper writes it: a loop over ("key", value) pairs, or one assignment.
        let pair = body.find(&format!("\", {name})")).map(|at| {
            let key_at = body[..at].rfind("(\"").unwrap() + 2;
            let line = body[..at].matches('\n').count();
            (line, body[key_at..at].to_owned())
        });
        let (env, converter) = if let Some((i, key)) = pair {
            let header = body
                .lines()
                .take(i + 1)
                .filter(|l| l.contains("for "))
                .last();
            let header = header.unwrap_or_else(|| panic!("{PYTHON}: {name}: no loop"));
            let (env, converter) = if header.contains("for key, dur in") {
                (key.to_uppercase(), "positive duration")
            } else if header.contains("for key, num in") {
                (key.to_uppercase(), "number")
            } else if header.contains("for var, path in") {
                (key, "path")
            } else {
                panic!("{PYTHON}: {name}: an unknown loop {header:?}");
            };
            (format!("{}{env}", options::ENV_PREFIX), converter)
        } else {
            let line = body
                .lines()
                .find(|l| l.contains(&format!("env[\"{}\"] =", o.env)))
                .unwrap_or_else(|| {
                    panic!("{PYTHON}: watchdog_env does not write {name} as {}", o.env)
                });
            let env = line.split('"').nth(1).unwrap().to_owned();
            let converter = if line.contains("allow_zero=True") {
                "duration >= 0"
            } else if line.contains("join(") {
                "list"
            } else {
                "unknown"
            };
            (env, converter)
        };
        assert_eq!(env, o.env, "{PYTHON}: the variable of {name}");
        assert!(
            fits(converter, o.kind),
            "{PYTHON}: {name} is written as a {converter}, the table's type is {:?}",
            o.kind
        );
    }
    // The loops build the variable the way this test reads it.
    assert!(body.contains("env[f\"AGENT_WATCHDOG_{key.upper()}\"]"));
    assert!(body.contains("env[f\"AGENT_WATCHDOG_{var}\"]"));
    // sdk_options takes the same policy and passes each one on.
    let sdk = python_params(&source, "sdk_options");
    let extra: BTreeSet<&str> = ["env", "plugin", "plugins"].into();
    let sdk_policy: Vec<&String> = sdk.iter().filter(|p| !extra.contains(p.as_str())).collect();
    assert_eq!(
        sdk_policy,
        params.iter().collect::<Vec<_>>(),
        "{PYTHON}: sdk_options"
    );
    for name in &params {
        assert!(
            source.contains(&format!("{name}={name},")),
            "{PYTHON}: sdk_options does not pass {name} on"
        );
    }
    every_variable_is_an_option(PYTHON, &source);
}

fn snake(camel: &str) -> String {
    let mut out = String::new();
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The `key: 'VALUE'` pairs of `const name = { … };` in the npm helper.
fn js_object(source: &str, name: &str) -> Vec<(String, String)> {
    let start = source
        .find(&format!("const {name} = {{"))
        .unwrap_or_else(|| panic!("{NPM_JS}: no const {name}"));
    let body = &source[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    body.split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once(':')?;
            Some((k.trim().to_owned(), v.trim().trim_matches('\'').to_owned()))
        })
        .collect()
}

#[test]
fn the_npm_helper_is_the_table() {
    let js = repo_file(NPM_JS);
    let mut keys = BTreeSet::new();
    for (object, converter) in [
        ("DURATIONS", "positive duration"),
        ("NUMBERS", "number"),
        ("PATHS", "path"),
    ] {
        for (key, suffix) in js_object(&js, object) {
            let o = options::find(&snake(&key))
                .unwrap_or_else(|| panic!("{NPM_JS}: the policy field {key} is no option"));
            let env = format!("{}{suffix}", options::ENV_PREFIX);
            assert_eq!(env, o.env, "{NPM_JS}: the variable of {key}");
            assert!(
                fits(converter, o.kind),
                "{NPM_JS}: {key} is written as a {converter}, the table's type is {:?}",
                o.kind
            );
            keys.insert(key);
        }
    }
    assert!(js.contains("env[`AGENT_WATCHDOG_${DURATIONS[key]}`]"));
    // The two fields written one by one.
    for (key, converter) in [("grace", "duration >= 0"), ("writeTools", "list")] {
        let o = options::find(&snake(key)).unwrap();
        assert!(
            js.contains(&format!("env.{} =", o.env)),
            "{NPM_JS}: {key} is not written as {}",
            o.env
        );
        assert!(fits(converter, o.kind), "{NPM_JS}: the type of {key}");
        keys.insert(key.to_owned());
    }
    assert!(js.contains("'grace', 'writeTools'"), "{NPM_JS}: KEYS");
    every_variable_is_an_option(NPM_JS, &js);

    // The types document the same fields, with the table's defaults.
    let types = repo_file(NPM_TYPES);
    let start = types
        .find("export interface WatchdogPolicy {")
        .expect("WatchdogPolicy");
    let body = &types[start..];
    let body = &body[..body.find("\n}").unwrap()];
    let mut documented = BTreeSet::new();
    let mut doc = String::new();
    for line in body.lines().skip(1).map(str::trim) {
        if line.starts_with("/**") {
            doc = line.to_owned();
            continue;
        }
        let Some((field, _)) = line.split_once("?:") else {
            continue;
        };
        let o = options::find(&snake(field)).unwrap_or_else(|| {
            panic!("{NPM_TYPES}: the policy field {field} is no option of the table")
        });
        if let Some(i) = doc.find("(default ") {
            let rest = &doc[i + "(default ".len()..];
            let default = &rest[..rest.find([';', ')']).unwrap()];
            assert_eq!(
                default,
                o.default_text(),
                "{NPM_TYPES}: the default of {field}"
            );
        }
        documented.insert(field.to_owned());
    }
    assert_eq!(
        documented, keys,
        "{NPM_TYPES} and {NPM_JS}: the policy fields"
    );
    every_variable_is_an_option(NPM_TYPES, &types);
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
            PYTHON,
            NPM_TYPES,
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
            let name = snake(&key);
            if extras.contains(&name.as_str()) {
                continue;
            }
            let o = options::find(&name)
                .unwrap_or_else(|| panic!("{file}: a helper call sets {key}, no option"));
            let value = value.trim_matches(|c| c == '"' || c == '\'');
            assert!(
                o.kind.check(value).is_ok(),
                "{file}: {key}: {value:?} is not {}",
                o.range()
            );
            seen += 1;
        }
    }
    assert!(seen >= 5, "saw {seen} documented helper arguments");
}

//! The documentation states the defaults of `run`'s flags (the policy table of `docs/cli.md`,
//! and `--flag` (default X) in the text of the README and every guide page); they must be the
//! ones `--help` shows, which the option table renders from the typed defaults
//! (`agent_watchdog::options`).

use clap::CommandFactory;

use agent_watchdog::cli::Cli;

#[path = "common/docs.rs"]
mod docs;

/// The default `run --help` shows for `--name` (`none` when it has none).
fn help_default(name: &str) -> String {
    let cli = Cli::command();
    let run = cli.find_subcommand("run").unwrap();
    let arg = run
        .get_arguments()
        .find(|a| a.get_long() == Some(name))
        .unwrap_or_else(|| panic!("the documentation names --{name}, which `run` does not have"));
    let values: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if values.is_empty() {
        "none".into()
    } else {
        values.join(",")
    }
}

#[test]
fn the_policy_table_states_the_defaults_of_the_help() {
    let text = docs::read(docs::CLI);
    let mut rows = 0;
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with("| flag | default |") {
            in_table = true;
            continue;
        }
        if !in_table || line.starts_with("|---") {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let flag = cells[1].trim_matches('`').trim_start_matches("--");
        let default = cells[2].trim_matches('`');
        assert_eq!(
            default,
            help_default(flag),
            "{}: the default of --{flag}",
            docs::CLI
        );
        rows += 1;
    }
    assert!(
        rows >= 10,
        "the policy table of {} has {rows} rows",
        docs::CLI
    );
}

#[test]
fn the_text_states_the_defaults_of_the_help() {
    let mut seen = 0;
    for (file, text) in docs::pages() {
        seen += defaults_in_text(&file, &text);
    }
    assert!(
        seen >= 2,
        "expected --reset-margin and --max-wait, saw {seen}"
    );
}

/// Checks every "`--name` (default X" of `text`; how many it saw.
fn defaults_in_text(file: &str, text: &str) -> usize {
    let mut seen = 0;
    for marker in ["` (default ", "`, default "] {
        for (i, _) in text.match_indices(marker) {
            // Only right after a flag: "`--name` (default X".
            let Some(start) = text[..i].rfind("`--") else {
                continue;
            };
            let flag = &text[start + 3..i];
            if !flag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                continue;
            }
            let rest = &text[i + marker.len()..];
            let default = &rest[..rest.find([';', ')', ',', ' ']).unwrap()];
            assert_eq!(
                default,
                help_default(flag),
                "{file}: the default of --{flag}"
            );
            seen += 1;
        }
    }
    seen
}

//! The telemetry guide's queries (`docs/telemetry.md`) and the tools that run them (`scripts/install-query-tools`
//! puts them in `.tools/`): promtool for PromQL, DuckDB (in a Python virtualenv) for SQL. A
//! missing tool is a failure that says how to install it, never a skip.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tool(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "\n\nThis test needs {what} at {}.\nRun `scripts/install-query-tools`.\n",
        path.display()
    );
    path
}

/// promtool, from Debian's `prometheus` package.
pub fn promtool() -> PathBuf {
    tool(
        root().join(".tools/prometheus/usr/bin/promtool"),
        "promtool (Prometheus's query engine)",
    )
}

/// The Python of the query tools' virtualenv (DuckDB, the OpenTelemetry Python SDK).
pub fn python() -> PathBuf {
    tool(
        root().join(".tools/query-py/bin/python"),
        "the query tools' Python (DuckDB, OpenTelemetry's Prometheus exporter)",
    )
}

/// Run `script` (in `tests/queries/`) with `args` and `stdin`; its stdout. Fails with its
/// stderr when it fails.
pub fn run_python(script: &str, args: &[&str], stdin: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/queries")
        .join(script);
    let mut child = Command::new(python())
        .arg(&path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The telemetry guide, `docs/telemetry.md`, which holds the queries.
pub fn telemetry_guide() -> String {
    std::fs::read_to_string(root().join("docs/telemetry.md")).expect("docs/telemetry.md")
}

/// The guide's code blocks in language `lang`, verbatim.
pub fn guide_blocks(lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    telemetry_guide()
        .split(&fence)
        .skip(1)
        .map(|b| b.split("```").next().unwrap_or("").to_owned())
        .collect()
}

/// The one block of language `lang` that contains `word`.
pub fn guide_query(lang: &str, word: &str) -> String {
    let found: Vec<String> = guide_blocks(lang)
        .into_iter()
        .filter(|b| b.contains(word))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "docs/telemetry.md: the {lang} blocks with {word}"
    );
    found.into_iter().next().unwrap()
}

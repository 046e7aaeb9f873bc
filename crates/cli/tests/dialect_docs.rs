//! Each dialect's page (`docs/dialects/<name>.md`) states what counts as what: its table is
//! the core's grammar ([`Dialect::grammar`]), row for row, so the page and the classifier
//! cannot disagree. A failure prints the table to paste.

#[path = "common/docs.rs"]
mod docs;

use watchdog_core::{Dialect, Signal};

const HEADER: &str = "| event | counts as | kind | also read |";

fn counts_as(s: Signal) -> &'static str {
    match s {
        Signal::Progress => "progress",
        Signal::KeepAlive => "keep-alive",
        Signal::Settle => "settle (the end of a turn)",
        Signal::HumanWait => "a human wait",
        _ => "?",
    }
}

/// The table the page must hold, rendered from the grammar.
fn rendered(d: Dialect) -> String {
    let mut out = vec![HEADER.to_owned(), "|---|---|---|---|".to_owned()];
    for row in d.grammar() {
        out.push(format!(
            "| {} | {} | `{}` | {} |",
            row.event,
            counts_as(row.signal),
            row.kind.as_str(),
            if row.reads.is_empty() { "" } else { row.reads }
        ));
    }
    out.join("\n")
}

/// The table on the page: from its header to the first line that is not a row.
fn on_page(text: &str) -> Option<String> {
    let start = text.find(HEADER)?;
    let table: Vec<&str> = text[start..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .map(str::trim_end)
        .collect();
    Some(table.join("\n"))
}

#[test]
fn each_dialect_page_states_the_grammar_of_the_code() {
    for d in [Dialect::Codex, Dialect::Opencode] {
        let page = format!("docs/dialects/{}.md", d.as_str());
        let text = docs::read(&page);
        let want = rendered(d);
        let got = on_page(&text).unwrap_or_else(|| {
            panic!("{page} has no table headed `{HEADER}`; the code's:\n\n{want}\n")
        });
        assert!(
            got == want,
            "{page}: the table differs from the code's grammar; the code's:\n\n{want}\n"
        );
        // Every kind of the table has its counter name on the page, and the page names the
        // version it was measured with.
        assert!(text.contains("measured with"), "{page}");
    }
}

/// The README's first lines name every CLI the watchdog reads, and link each dialect's page.
#[test]
fn the_readme_names_the_clis_it_supports() {
    let readme = docs::read(docs::README);
    let head: String = readme.lines().take(8).collect::<Vec<_>>().join("\n");
    for name in ["Claude Code", "Codex", "opencode"] {
        assert!(head.contains(name), "README's first lines: {head}");
    }
    for d in [Dialect::Codex, Dialect::Opencode] {
        let page = format!("docs/dialects/{}.md", d.as_str());
        assert!(readme.contains(&page), "README links {page}");
    }
}

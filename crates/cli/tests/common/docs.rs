//! The documentation as the tests read it: the README (the front door) and the guide pages in
//! `docs/`, which hold the tables the code is checked against.
#![allow(dead_code)]

use std::path::PathBuf;

/// The guide page with the policy, the option table and the exit codes.
pub const CLI: &str = "docs/cli.md";
/// The guide page of the SDK drop-in, with its snippets.
pub const SDK_DROP_IN: &str = "docs/sdk-drop-in.md";
/// The front door.
pub const README: &str = "README.md";

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A file of the repository, by its path from the root; a failure names it.
pub fn read(rel: &str) -> String {
    let path = root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The README and every guide page (`docs/*.md`), as (path from the root, text), in name
/// order after the README.
pub fn pages() -> Vec<(String, String)> {
    let mut guide: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("the docs/ folder")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    guide.sort();
    assert!(guide.iter().any(|p| p == CLI), "no {CLI}");
    std::iter::once(README.to_owned())
        .chain(guide)
        .map(|p| {
            let text = read(&p);
            (p, text)
        })
        .collect()
}

/// The section of `text` under the heading line `heading` (e.g. `"## Exit codes"`), up to the
/// next heading of the same or a higher level; a failure names `file`.
pub fn section<'a>(file: &str, text: &'a str, heading: &str) -> &'a str {
    let level = heading.chars().take_while(|&c| c == '#').count();
    let start = text
        .lines()
        .scan(0, |at, l| {
            let here = *at;
            *at += l.len() + 1;
            Some((here, l))
        })
        .find(|(_, l)| l.trim_end() == heading)
        .map(|(at, _)| at)
        .unwrap_or_else(|| panic!("{file}: no heading {heading:?}"));
    let body = &text[start..];
    let mut at = body.find('\n').map_or(body.len(), |i| i + 1);
    let mut fenced = false;
    for line in body[at..].split_inclusive('\n') {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !fenced && hashes > 0 && hashes <= level && line[hashes..].starts_with(' ') {
            break;
        }
        at += line.len();
    }
    &body[..at]
}

/// The fenced blocks of language `lang` in `text`, verbatim, each ending in a newline.
pub fn blocks(text: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(&fence) {
        // A fence opens at the start of a line only.
        if open > 0 && !rest[..open].ends_with('\n') {
            rest = &rest[open + fence.len()..];
            continue;
        }
        let body = &rest[open + fence.len()..];
        let end = body
            .find("\n```")
            .unwrap_or_else(|| panic!("an unclosed ```{lang} block"));
        out.push(body[..end].to_owned() + "\n");
        rest = &body[end + 4..];
    }
    out
}

//! Every relative link of the documentation points somewhere: in every Markdown file of the
//! repository (the README, `docs/`, `CHANGELOG.md`, `BENCHMARKS.md`, and every README below
//! `examples/`, `packaging/`, `crates/`, `plugin/`, …), a link's file exists (inside the
//! repository), and a `#anchor` names a heading of the `.md` file it points to, as GitHub
//! makes a heading's anchor. Links to other sites (`https:`, `mailto:`) are not followed.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

#[path = "common/docs.rs"]
mod docs;

/// Every `.md` file under `dir`, except in hidden folders, build output and installed packages.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        let kind = e.file_type().unwrap();
        if kind.is_dir() {
            if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The text of a Markdown file without its fenced code blocks (their lines left empty, so
/// line numbers stay), and whether each line was fenced.
fn outside_fences(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<String> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|&c| c == '`' || c == '~')
            .collect();
        let is_fence =
            marker.len() >= 3 && marker.chars().all(|c| c == marker.as_bytes()[0] as char);
        match &fence {
            Some(open) => {
                if is_fence
                    && marker.starts_with(open.as_str())
                    && trimmed[marker.len()..].trim().is_empty()
                {
                    fence = None;
                }
            }
            None if is_fence => fence = Some(marker),
            None => out.push((i + 1, line)),
        }
    }
    out
}

/// `line` without its code spans (`` `…` ``, ``` ``…`` ```).
fn without_code_spans(line: &str) -> String {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'`' {
            let run = b[i..].iter().take_while(|&&c| c == b'`').count();
            let ticks = &line[i..i + run];
            // The closing run of the same length, not part of a longer run.
            let mut j = i + run;
            let mut close = None;
            while let Some(k) = line[j..].find(ticks) {
                let at = j + k;
                let len = b[at..].iter().take_while(|&&c| c == b'`').count();
                if len == run {
                    close = Some(at);
                    break;
                }
                j = at + len;
            }
            match close {
                Some(at) => i = at + run,
                None => {
                    out.push_str(ticks);
                    i += run;
                }
            }
        } else {
            let c = line[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The link targets of one line (inline links and images, `[text](target "title")`, and
/// reference definitions, `[label]: target`).
fn targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut out = Vec::new();
    if let Some(rest) = line.trim_start().strip_prefix('[') {
        if let Some((_, def)) = rest.split_once("]:") {
            if let Some(t) = def.split_whitespace().next() {
                out.push(t.trim_matches(|c| c == '<' || c == '>').to_owned());
            }
        }
    }
    let mut rest = line.as_str();
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        // To the matching `)`, allowing one level of parentheses inside.
        let mut depth = 0;
        let mut end = None;
        for (k, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = Some(k);
                    break;
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let inner = after[..end].trim();
        let target = if let Some(angled) = inner.strip_prefix('<') {
            angled.split('>').next().unwrap_or("")
        } else {
            inner.split_whitespace().next().unwrap_or("")
        };
        out.push(target.to_owned());
        rest = &after[end..];
    }
    out
}

/// A heading's text as GitHub renders it for its anchor: code spans keep their text, links
/// their text, emphasis markers go.
fn rendered(heading: &str) -> String {
    let mut s = heading.replace('`', "");
    // [text](url) -> text
    while let (Some(open), Some(mid)) = (s.find('['), s.find("](")) {
        if mid < open {
            break;
        }
        let Some(close) = s[mid..].find(')') else {
            break;
        };
        s = format!(
            "{}{}{}",
            &s[..open],
            &s[open + 1..mid],
            &s[mid + close + 1..]
        );
    }
    s.replace("**", "").replace('*', "")
}

/// GitHub's anchor of a heading: lower case, every character but letters, digits, `_`, `-`
/// and spaces dropped, each space a `-`.
fn slug(heading: &str) -> String {
    rendered(heading)
        .trim()
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '_' || c == '-' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a Markdown text: its headings' (a repeated one gets `-1`, `-2`, … as on
/// GitHub) and explicit `<a id="…">` / `name="…"` ones.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, line) in outside_fences(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let base = slug(line[hashes..].trim().trim_end_matches('#').trim());
            let mut anchor = base.clone();
            let mut n = 0;
            while out.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            out.insert(anchor);
        }
        for attr in ["id=\"", "name=\""] {
            for (i, _) in line.match_indices(attr) {
                let rest = &line[i + attr.len()..];
                if let Some(end) = rest.find('"') {
                    out.insert(rest[..end].to_owned());
                }
            }
        }
    }
    out
}

/// `path` without `.` and `..` parts; `None` when it leaves `root`.
fn normalize(root: &Path, path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            c => out.push(c),
        }
    }
    out.starts_with(root).then_some(out)
}

/// The broken links of the Markdown files `files` (under `root`), one line each:
/// `file:line: target: why`.
fn broken_links(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let root = root.canonicalize().unwrap();
    let mut broken = Vec::new();
    for file in files {
        let file = file.canonicalize().unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for (n, line) in outside_fences(&text) {
            for target in targets(line) {
                let at = format!("{name}:{n}: {target}");
                if target.is_empty() {
                    broken.push(format!("{at}: an empty link"));
                    continue;
                }
                let scheme = target.split_once(':').map(|(s, _)| s);
                if scheme.is_some_and(|s| {
                    !s.is_empty()
                        && s.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                }) || target.starts_with("//")
                {
                    continue; // another site
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target.as_str(), None),
                };
                let dest = if path.is_empty() {
                    file.clone()
                } else if path.starts_with('/') {
                    root.join(path.trim_start_matches('/'))
                } else {
                    file.parent().unwrap().join(path)
                };
                let Some(dest) = normalize(&root, &dest) else {
                    broken.push(format!("{at}: points outside the repository"));
                    continue;
                };
                if !dest.exists() {
                    broken.push(format!("{at}: no such file"));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if dest.extension().is_some_and(|e| e == "md") {
                    let text = std::fs::read_to_string(&dest).unwrap();
                    if !anchors(&text).contains(anchor) {
                        broken.push(format!("{at}: no heading with this anchor"));
                    }
                }
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_of_the_documentation_points_to_a_file_and_a_heading() {
    let root = docs::root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    let names: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    for must in [
        "README.md",
        "docs/cli.md",
        "docs/architecture.md",
        "examples/node-service/README.md",
        "examples/python-worker/README.md",
        "examples/temporal/README.md",
        "packaging/python/README.md",
        "packaging/npm/agent-sdk-watchdog/README.md",
    ] {
        assert!(
            names.iter().any(|n| n == must),
            "{must} is not checked: {names:?}"
        );
    }
    let broken = broken_links(&root, &files);
    assert!(
        broken.is_empty(),
        "{} broken links:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

/// The checker finds what it is for: a missing file, a missing heading, a link out of the
/// repository; and passes what GitHub resolves.
#[test]
fn the_checker_reports_a_missing_file_a_missing_anchor_and_a_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(
        root.join("docs/guide.md"),
        "# Guide\n\n## Exit codes: `run`'s own\n\n## Exit codes: `run`'s own\n\n```yaml\n# not a heading\n```\n",
    )
    .unwrap();
    std::fs::write(
        root.join("README.md"),
        "# Top\n\n\
         [ok](docs/guide.md#exit-codes-runs-own) [ok too](docs/guide.md#exit-codes-runs-own-1)\n\
         [here](#top) ![img](docs/) [site](https://example.org/x#y) `[code](nowhere.md)`\n\
         [gone](docs/missing.md) [no heading](docs/guide.md#not-a-heading)\n\
         [out](../elsewhere.md)\n\n\
         ```md\n[fenced](nowhere.md)\n```\n",
    )
    .unwrap();
    let files = vec![root.join("README.md"), root.join("docs/guide.md")];
    let broken = broken_links(root, &files);
    assert_eq!(
        broken,
        [
            "README.md:5: docs/missing.md: no such file",
            "README.md:5: docs/guide.md#not-a-heading: no heading with this anchor",
            "README.md:6: ../elsewhere.md: points outside the repository",
        ],
        "{broken:#?}"
    );
}

#[test]
fn anchors_are_githubs() {
    for (heading, anchor) in [
        (
            "Busy is not hung: evidence from the process tree",
            "busy-is-not-hung-evidence-from-the-process-tree",
        ),
        ("A long-lived host: `/metrics`", "a-long-lived-host-metrics"),
        (
            "How the drop-in ends inside its host's `close()`",
            "how-the-drop-in-ends-inside-its-hosts-close",
        ),
        (
            "Target 3: `run` over 1M lines ≤ 16 MB — met",
            "target-3-run-over-1m-lines--16-mb--met",
        ),
        (
            "Issue 17, second round: the targets",
            "issue-17-second-round-the-targets",
        ),
        (
            "See [the guide](docs/cli.md) and **this**",
            "see-the-guide-and-this",
        ),
        ("snake_case stays", "snake_case-stays"),
    ] {
        assert_eq!(slug(heading), anchor, "{heading}");
    }
}

//! The CLI crate's modules import each other without a cycle: a command's module may use the
//! shared ones (`cli`, `exit_code`, `policy_args`, …), and nothing shared reaches back into a
//! command. Read from the sources: every `crate::<module>` a file names is an edge from its
//! top-level module (a file of `run/` belongs to `run`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The edges `module -> modules it names`, from the sources under `src`.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut all = Vec::new();
    files(src, &mut all);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in all {
        let rel = f.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = first.trim_end_matches(".rs").to_owned();
        if matches!(top.as_str(), "lib" | "main" | "bin") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, _) in text.match_indices("crate::") {
            let name: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != top && name.chars().all(|c| !c.is_uppercase()) {
                g.entry(top.clone()).or_default().insert(name);
            }
        }
    }
    g
}

/// A cycle in `g`, if any, as the modules along it.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut c = path[i..].to_vec();
            c.push(n.to_owned());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_owned());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(n, g, &mut Vec::new(), &mut done))
}

#[test]
fn the_cli_modules_import_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    assert!(g.contains_key("run") && g["run"].contains("cli"), "{g:?}");
    if let Some(c) = cycle(&g) {
        panic!("import cycle: {}", c.join(" -> "));
    }
}

#[test]
fn a_cycle_is_found() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [
        ("cli", "audit"),
        ("audit", "mcp"),
        ("mcp", "run"),
        ("run", "cli"),
    ] {
        g.entry(a.into()).or_default().insert(b.into());
    }
    let c = cycle(&g).expect("the old cycle");
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 5, "{c:?}");
    g.get_mut("mcp").unwrap().remove("run");
    assert_eq!(cycle(&g), None);
}

//! No crate of the workspace has an import circle between its top-level modules, and the CLI
//! crate's modules import each other without a cycle: `cli.rs` assembles the commands,
//! each command's module may use the shared ones (`exit_code`, `policy_args`, `verdict`, …), and
//! nothing shared reaches back into a command. Read from the sources: every `crate::<module>` a
//! file names is an edge from its top-level module (a file of `run/` belongs to `run`); the
//! file-level check also follows `super::`, `self::` and a parent's `child::` paths.

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

/// The edges `module -> modules it names`, from the sources under `src`: every `crate::…` path
/// of a file's code (groups `crate::{a, b::c}` included; comments and unit tests left out: a
/// doc link is not an import) is an edge from the file's top-level module to the module the
/// path begins with (a file of `run/` belongs to `run`).
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
        let text = code_of(&std::fs::read_to_string(&f).unwrap());
        let bytes = text.as_bytes();
        for (i, _) in text.match_indices("crate::") {
            if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_') {
                continue;
            }
            let (path, rest) = segments(&text[i + 7..]);
            let firsts: Vec<String> = match path.first() {
                Some(m) => vec![m.clone()],
                None => group(rest)
                    .into_iter()
                    .filter_map(|e| e.first().cloned())
                    .collect(),
            };
            for name in firsts {
                if name != top && name.chars().all(|c| !c.is_uppercase()) {
                    g.entry(top.clone()).or_default().insert(name);
                }
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
    assert!(
        g.contains_key("run") && g["run"].contains("exit_code"),
        "{g:?}"
    );
    if let Some(c) = cycle(&g) {
        panic!("import cycle: {}", c.join(" -> "));
    }
}

/// The source directories of every crate of the workspace (`crates/*/src`, `benches/src`).
fn workspace_crates() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .chain([root.join("benches")])
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, p.join("src"))
        })
        .collect();
    out.sort();
    out
}

/// No crate of the workspace has an import circle between its top-level modules (the core's
/// rooms included: `event`, `evidence`, `session`, …). Measured: each crate's modules and
/// edges are printed.
#[test]
fn no_crate_has_an_import_circle_between_its_top_level_modules() {
    let crates = workspace_crates();
    let names: Vec<&str> = crates.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "core", "host", "runtime", "audit", "cli", "wasm", "python", "json", "mock-api",
    ] {
        assert!(names.contains(&want), "{want} not found among {names:?}");
    }
    let mut circles = Vec::new();
    for (name, src) in &crates {
        let g = graph(src);
        if name == "core" {
            // Group imports are read: `use crate::{classify::Signal, …}` names its modules.
            for (from, to) in [
                ("session", "event"),
                ("event", "evidence"),
                ("registry", "session"),
            ] {
                assert!(g[from].contains(to), "core: {from} -> {to} not seen: {g:?}");
            }
        }
        let modules: BTreeSet<&String> = g.keys().chain(g.values().flatten()).collect();
        let edges: usize = g.values().map(BTreeSet::len).sum();
        eprintln!("{name}: {} top-level modules, {edges} edges", modules.len());
        if let Some(c) = cycle(&g) {
            circles.push(format!("{name}: {}", c.join(" -> ")));
        }
    }
    assert!(circles.is_empty(), "import circles: {circles:#?}");
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

/// The modules of the crate's files under `src`: `run/live.rs` is `["run", "live"]`,
/// `run/mod.rs` is `["run"]` (the crate root and the binaries are left out), with each file's
/// text up to its unit tests (a `mod tests` names its own file's items through `super::`).
fn modules(src: &Path) -> BTreeMap<Vec<String>, String> {
    let mut all = Vec::new();
    files(src, &mut all);
    let mut out = BTreeMap::new();
    for f in all {
        let rel = f.strip_prefix(src).unwrap().with_extension("");
        let mut m: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if m.last().is_some_and(|l| l == "mod") {
            m.pop();
        }
        if matches!(m[0].as_str(), "lib" | "main" | "bin") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let text = match text.find("#[cfg(test)]\nmod tests") {
            Some(i) => text[..i].to_owned(),
            None => text,
        };
        out.insert(m, text);
    }
    out
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let n = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..n]
}

/// The path segments at the start of `s` (`a::b::c` of `a::b::c::{…}`), and the rest.
fn segments(mut s: &str) -> (Vec<String>, &str) {
    let mut out = Vec::new();
    loop {
        let id = ident(s);
        if id.is_empty() {
            return (out, s);
        }
        out.push(id.to_owned());
        s = &s[id.len()..];
        match s.strip_prefix("::") {
            Some(rest) => s = rest,
            None => return (out, s),
        }
    }
}

/// The elements of a `{…}` group at the start of `s` (first-level, by their leading path).
fn group(s: &str) -> Vec<Vec<String>> {
    let Some(body) = s.strip_prefix('{') else {
        return Vec::new();
    };
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(segments(body[start..i].trim()).0);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(segments(body[start..i].trim()).0);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.retain(|e| !e.is_empty());
    out
}

/// The files `text` (the file of module `me`) names among `known`: every `crate::…`,
/// `super::…` and `self::…` path (groups too) goes to the deepest module it names, and a
/// child module the file declares (`mod x;`) is named by `x::…`.
fn file_edges(me: &[String], text: &str, known: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let resolve = |base: Vec<String>, path: &[String]| {
        let mut best = base.clone();
        let mut m = base;
        for seg in path {
            m.push(seg.clone());
            if !known.contains(&m) {
                break;
            }
            best = m.clone();
        }
        best
    };
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    for kw in ["crate::", "super::", "self::"] {
        for (i, _) in text.match_indices(kw) {
            if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_') {
                continue;
            }
            let mut base: Vec<String> = match kw {
                "crate::" => Vec::new(),
                "super::" => me[..me.len() - 1].to_vec(),
                _ => me.to_vec(),
            };
            let (mut path, rest) = segments(&text[i + kw.len()..]);
            while path.first().is_some_and(|s| s == "super") {
                base.pop();
                path.remove(0);
            }
            // `segments` stops after the last `::`: a group follows it directly.
            let elements = group(rest);
            if elements.is_empty() {
                out.insert(resolve(base.clone(), &path));
            }
            for e in elements {
                let full: Vec<String> = path.iter().chain(&e).cloned().collect();
                out.insert(resolve(base.clone(), &full));
            }
        }
    }
    for line in text.lines() {
        let decl = line
            .trim_start()
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ");
        if let Some(child) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            let uses = text.match_indices(&format!("{child}::")).any(|(i, _)| {
                i == 0
                    || !(bytes[i - 1].is_ascii_alphanumeric()
                        || bytes[i - 1] == b'_'
                        || bytes[i - 1] == b':')
            });
            if uses {
                let mut m = me.to_vec();
                m.push(child.to_owned());
                out.insert(m);
            }
        }
    }
    out.retain(|m| !m.is_empty() && m.as_slice() != me && known.contains(m));
    out
}

/// A file's code as its module imports it: no comment lines (a doc link is not an import),
/// and nothing from its first `#[cfg(test)]` on (a test module's `super::` is the file itself).
fn code_of(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The edges `file -> files it names` (as `run/live`), from the sources under `src`.
fn file_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let known: BTreeSet<Vec<String>> = mods.keys().cloned().collect();
    mods.iter()
        .map(|(m, text)| {
            let edges = file_edges(m, &code_of(text), &known)
                .into_iter()
                .map(|e| e.join("/"))
                .collect();
            (m.join("/"), edges)
        })
        .collect()
}

/// Not only between top-level modules: no file of the crate reaches back into a file that
/// uses it (a command's `mod.rs` and the files of its jobs included: a file takes what it
/// needs from the file of that job, never from its parent).
#[test]
fn the_cli_files_import_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = file_graph(&src);
    for (from, to) in [
        ("run/live", "run/host"),
        ("run", "run/supervise"),
        ("run/supervise", "run/live"),
        ("cli", "run"),
    ] {
        assert!(g[from].contains(to), "{from} -> {to} not seen: {g:?}");
    }
    if let Some(c) = cycle(&g) {
        panic!("import cycle between files: {}", c.join(" -> "));
    }
}

/// The commands (each a module `cli.rs` assembles, or the drop-in's entry) and the shared
/// modules they use: a shared module never imports a command, and nothing imports `cli.rs`
/// (only `main.rs` does).
#[test]
fn shared_modules_import_no_command_and_nothing_imports_the_command_line() {
    const COMMANDS: [&str; 9] = [
        "run",
        "claim",
        "timeouts",
        "replay",
        "audit",
        "demo",
        "hook",
        "plugin_dir",
        "drop_in",
    ];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    for c in COMMANDS {
        assert!(
            src.join(c).is_dir() || src.join(format!("{c}.rs")).is_file(),
            "{c}: no such module"
        );
    }
    assert!(
        g["cli"].contains("run") && g["cli"].contains("audit"),
        "{g:?}"
    );
    for (module, uses) in &g {
        assert!(!uses.contains("cli"), "{module} imports cli");
        if COMMANDS.contains(&module.as_str()) || module == "cli" {
            continue;
        }
        let commands: Vec<&String> = uses
            .iter()
            .filter(|u| COMMANDS.contains(&u.as_str()))
            .collect();
        assert!(
            commands.is_empty(),
            "the shared module {module} imports {commands:?}"
        );
    }
}

/// Each command owns its flags: a clap `Args` struct lives in an `args.rs` of its command's
/// folder, or in `policy_args.rs` (the flag groups several commands share).
#[test]
fn every_command_owns_its_flags() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut owners = BTreeSet::new();
    for f in all {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&f).unwrap();
        let derives_args = text.match_indices("#[derive(").any(|(i, _)| {
            let list = &text[i..i + text[i..].find(")]").unwrap()];
            list.split([',', '(', ' '])
                .any(|w| w == "Args" || w == "clap::Args")
        });
        if derives_args {
            assert!(
                rel.ends_with("/args.rs") || rel == "policy_args.rs",
                "{rel} defines a clap Args struct"
            );
            owners.insert(rel);
        }
    }
    for f in [
        "run/args.rs",
        "replay/args.rs",
        "audit/args.rs",
        "demo/args.rs",
        "hook/args.rs",
        "claim/args.rs",
        "timeouts/args.rs",
    ] {
        assert!(owners.contains(f), "{f} defines no flags: {owners:?}");
    }
}

#[test]
fn the_file_parser_reads_every_kind_of_path() {
    let known: BTreeSet<Vec<String>> = [
        "run",
        "run/live",
        "run/host",
        "run/config",
        "exit_code",
        "verdict",
        "replay",
    ]
    .iter()
    .map(|m| m.split('/').map(str::to_owned).collect())
    .collect();
    let me: Vec<String> = vec!["run".into(), "live".into()];
    let text = "use super::{config::RunConfig, host::{wall_ms, Host}};\n\
                use crate::exit_code::{self, Ending};\n\
                fn f() { crate::verdict::ms(1); super::Finished; self::inner(); }\n\
                // subcrate::run is not crate::…, nor is my_super::x\n";
    let names =
        |e: BTreeSet<Vec<String>>| -> Vec<String> { e.iter().map(|m| m.join("/")).collect() };
    assert_eq!(
        names(file_edges(&me, text, &known)),
        ["exit_code", "run", "run/config", "run/host", "verdict"]
    );
    // A parent that declares a child and names it.
    let me: Vec<String> = vec!["run".into()];
    let text = "mod live;\nmod host;\nuse live::supervise;\n";
    assert_eq!(names(file_edges(&me, text, &known)), ["run/live"]);
}

/// The other crates' files too: no cycle between files of different jobs. The runtime and
/// the audit hold to the CLI's rule (a file takes what it needs from the file of that job,
/// never from its parent). In the core and the host crate a type's methods are split by job
/// into the files below the one that defines it (`registry/observe.rs`, `registry/timer.rs`,
/// … add to the `Registry` of `registry/mod.rs`; `metrics/exposition.rs` renders the
/// `Metrics` of `metrics/mod.rs`): a file naming its own parent is that, not an import of
/// another job, so that edge alone is not counted there.
#[test]
fn the_other_crates_files_import_each_other_without_a_cycle() {
    for (krate, to_parent_counts, files) in [
        ("runtime", true, 10),
        ("audit", true, 10),
        ("core", false, 10),
        ("host", false, 8),
    ] {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(krate)
            .join("src");
        let mut g = file_graph(&src);
        assert!(g.len() > files, "{krate}: {g:?}");
        if !to_parent_counts {
            for (file, edges) in g.iter_mut() {
                let parent = file.rsplit_once('/').map_or("", |(p, _)| p);
                edges.remove(parent);
            }
        }
        if let Some(c) = cycle(&g) {
            panic!("{krate}: import cycle between files: {}", c.join(" -> "));
        }
    }
}

/// A doc link or a comment is not an import, and a test module's `super::` is its own file.
#[test]
fn comments_and_test_modules_name_no_file() {
    let text = "//! See [`crate::b`].\n/// [`super::c`]\nuse crate::a::X;\n\
                #[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::b::Y;\n}\n";
    let code = code_of(text);
    assert!(code.contains("crate::a::X"), "{code}");
    assert!(!code.contains("crate::b"), "{code}");
    assert!(!code.contains("super::"), "{code}");
}

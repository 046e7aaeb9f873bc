//! Which agent CLI a command line runs, as far as it says ([`of_command`]): the host's first
//! word on a session's [`Dialect`] (the session's first decisive line confirms it or chooses
//! another: [`watchdog_core::SessionDialect`]).
//!
//! The program is read by its file name (`claude`, `codex`, `opencode`, with a path, a
//! Windows suffix, or as the npm packages' own entry points: `codex.js`); through the launchers
//! a user puts in front of them, the command they launch: `npx` / `pnpx` / `bunx` and `pnpm` /
//! `yarn` / `bun` `dlx`/`x` (by the package or its bin: `@openai/codex`, `opencode-ai`,
//! `@anthropic-ai/claude-code`), `node` / `bun` / `deno run` running a script, and `env`,
//! `nice`, `nohup`, `timeout`, `stdbuf` running a command. A shell running a string
//! (`sh -c "codex …"`) is not read: its lines tell.
//!
//! ```
//! use watchdog_core::Dialect;
//! use watchdog_host::dialect::of_command;
//! assert_eq!(of_command(&["codex", "exec", "--json", "fix it"]), Some(Dialect::Codex));
//! assert_eq!(of_command(&["npx", "-y", "opencode-ai@1.18.33", "run", "--format", "json", "x"]), Some(Dialect::Opencode));
//! assert_eq!(of_command(&["/usr/local/bin/claude", "-p", "x"]), Some(Dialect::Claude));
//! assert_eq!(of_command(&["python3", "agent.py"]), None);
//! ```

use watchdog_core::Dialect;

/// The dialect of a program or package name (`codex`, `codex.exe`, `@openai/codex@0.169.0`,
/// `.../bin/codex.js`).
fn of_name(name: &str) -> Option<Dialect> {
    // A package with its version: `@openai/codex@0.169.0`, `opencode-ai@latest` (an `@` in
    // the last part, not the scope's, nor one in a path: `…/@openai/codex/bin/codex.js`).
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let name = match name.rfind('@') {
        Some(at) if at > 0 && at >= last_slash => &name[..at],
        _ => name,
    };
    let name = match name {
        "@openai/codex" => "codex",
        "opencode-ai" => "opencode",
        "@anthropic-ai/claude-code" => "claude",
        // A path's last part, with either separator (a Windows path reads the same here).
        path => path.rsplit(['/', '\\']).next().unwrap_or(path),
    };
    let stem = [".exe", ".cmd", ".bat", ".ps1", ".js", ".mjs", ".cjs"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(name);
    match stem {
        "claude" => Some(Dialect::Claude),
        "codex" => Some(Dialect::Codex),
        "opencode" => Some(Dialect::Opencode),
        _ => None,
    }
}

/// What a launcher runs: the rest of the command line, from the word it launches.
fn launched<'a, S: AsRef<str>>(program: &str, rest: &'a [S]) -> Option<(&'a str, &'a [S])> {
    let word = |i: usize| rest.get(i).map(AsRef::as_ref);
    let stem = program.rsplit(['/', '\\']).next().unwrap_or(program);
    let stem = stem.strip_suffix(".exe").unwrap_or(stem);
    // Where the launched word starts, and which flags take a value there.
    let (from, valued): (usize, &[&str]) = match (stem, word(0)) {
        ("npx" | "pnpx" | "bunx", _) => (0, &["-p", "--package", "-c", "--call"]),
        ("pnpm" | "yarn", Some("dlx")) | ("bun", Some("x")) => (1, &["-p", "--package"]),
        ("node" | "nodejs", _) => (
            0,
            &["-r", "--require", "--import", "--loader", "-e", "--eval"],
        ),
        ("bun", Some("run")) | ("deno", Some("run")) => (1, &[]),
        ("bun", _) => (0, &[]),
        ("env", _) => (
            0,
            &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        ),
        ("nice", _) => (0, &["-n", "--adjustment"]),
        ("nohup", _) => (0, &[]),
        ("stdbuf", _) => (0, &["-i", "-o", "-e"]),
        // `timeout [flags] DURATION COMMAND`: the duration is one more word to skip.
        ("timeout", _) => (0, &["-s", "--signal", "-k", "--kill-after"]),
        _ => return None,
    };
    let mut i = from;
    let mut skip_duration = stem == "timeout";
    while let Some(w) = word(i) {
        if w == "--" {
            i += 1;
            break;
        }
        if valued.contains(&w) {
            // `npx -p @openai/codex codex …`: the package says it.
            if matches!(w, "-p" | "--package") {
                if let Some(pkg) = word(i + 1).filter(|p| of_name(p).is_some()) {
                    return Some((pkg, &rest[i + 2..]));
                }
            }
            i += 2;
            continue;
        }
        if w.starts_with('-') || (stem == "env" && w.contains('=')) {
            i += 1;
            continue;
        }
        if std::mem::take(&mut skip_duration) {
            i += 1;
            continue;
        }
        break;
    }
    let w = word(i)?;
    Some((w, &rest[i + 1..]))
}

/// The dialect `argv` (the program first) runs, as far as the command line says; `None` when
/// it does not name one of the CLIs (a script, a shell, another program).
pub fn of_command<S: AsRef<str>>(argv: &[S]) -> Option<Dialect> {
    let (program, mut rest) = argv.split_first()?;
    let mut program = program.as_ref();
    // Launchers in front of launchers (`env X=1 npx codex`), a few deep at most.
    for _ in 0..4 {
        if let Some(d) = of_name(program) {
            return Some(d);
        }
        let (next, after) = launched(program, rest)?;
        program = next;
        rest = after;
    }
    of_name(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(line: &str) -> Option<Dialect> {
        of_command(&line.split(' ').collect::<Vec<_>>())
    }

    #[test]
    fn the_program_by_its_name_with_any_path_or_suffix() {
        assert_eq!(of("codex exec --json x"), Some(Dialect::Codex));
        assert_eq!(of("./node_modules/.bin/codex exec"), Some(Dialect::Codex));
        assert_eq!(of("C:\\tools\\codex.cmd exec"), Some(Dialect::Codex));
        assert_eq!(of("codex.exe exec"), Some(Dialect::Codex));
        assert_eq!(
            of("/opt/opencode/bin/opencode run"),
            Some(Dialect::Opencode)
        );
        assert_eq!(of("opencode.exe run"), Some(Dialect::Opencode));
        assert_eq!(of("claude -p hi"), Some(Dialect::Claude));
        assert_eq!(of("claude.exe -p hi"), Some(Dialect::Claude));
        assert_eq!(of("codexx exec"), None);
        assert_eq!(of("python3 agent.py"), None);
    }

    #[test]
    fn behind_a_package_runner() {
        assert_eq!(of("npx @openai/codex exec --json x"), Some(Dialect::Codex));
        assert_eq!(
            of("npx -y @openai/codex@0.169.0 exec"),
            Some(Dialect::Codex)
        );
        assert_eq!(
            of("npx --yes opencode-ai run --format json x"),
            Some(Dialect::Opencode)
        );
        assert_eq!(of("npx -p @openai/codex codex exec"), Some(Dialect::Codex));
        assert_eq!(
            of("pnpm dlx opencode-ai@latest run"),
            Some(Dialect::Opencode)
        );
        assert_eq!(
            of("yarn dlx @anthropic-ai/claude-code -p x"),
            Some(Dialect::Claude)
        );
        assert_eq!(of("bunx opencode-ai run"), Some(Dialect::Opencode));
        assert_eq!(of("bun x @openai/codex exec"), Some(Dialect::Codex));
        assert_eq!(of("npx cowsay codex"), None, "the package is cowsay");
        assert_eq!(of("pnpm install codex"), None, "not a runner");
    }

    #[test]
    fn behind_an_interpreter_or_a_wrapper() {
        assert_eq!(
            of("node /x/node_modules/@openai/codex/bin/codex.js exec"),
            Some(Dialect::Codex)
        );
        assert_eq!(
            of("node --max-old-space-size=4096 codex.js exec"),
            Some(Dialect::Codex)
        );
        assert_eq!(of("env FOO=1 -u BAR codex exec"), Some(Dialect::Codex));
        assert_eq!(of("nice -n 5 opencode run"), Some(Dialect::Opencode));
        assert_eq!(of("timeout -s KILL 2h codex exec"), Some(Dialect::Codex));
        assert_eq!(of("timeout 2h claude -p x"), Some(Dialect::Claude));
        assert_eq!(
            of("env nice nohup stdbuf -oL codex exec"),
            Some(Dialect::Codex)
        );
        assert_eq!(
            of("bash -c codex"),
            None,
            "a shell's string is its lines' to tell"
        );
        assert_eq!(of("env"), None);
        assert_eq!(of("npx"), None);
        assert_eq!(of_command::<&str>(&[]), None);
    }
}

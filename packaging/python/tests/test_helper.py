"""The installed package's helper, run by scripts/test-packages with the Python of a fresh
virtual environment the wheel was installed into (stdlib unittest, no other dependency)."""

import datetime
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import unittest
from unittest import mock

import agent_sdk_watchdog as w

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def fake_claude(directory: str) -> str:
    """A stand-in for the real claude: prints an init and a success result, exits 0."""
    path = os.path.join(directory, "claude")
    with open(path, "w") as f:
        f.write(
            "#!/bin/sh\n"
            'echo \'{"type":"system","subtype":"init","session_id":"s"}\'\n'
            'echo \'{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s"}\'\n'
        )
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class CliPath(unittest.TestCase):
    def test_is_the_claude_watchdog_this_environment_installed(self):
        path = w.cli_path()
        self.assertEqual(path, os.path.join(sysconfig.get_path("scripts"), "claude-watchdog"))
        self.assertTrue(os.access(path, os.X_OK))
        self.assertEqual(shutil.which("claude-watchdog"), path, "the same one is first on PATH")

    def test_where_there_are_no_binaries_the_package_imports_and_says_so_in_one_line(self):
        """As on macOS and Windows, whose wheels carry the in-process API only: a copy of the
        installed package with no binary anywhere; then, as where the extension does not load,
        without it."""
        pkg = os.path.dirname(w.__file__)
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(pkg, os.path.join(tmp, "agent_sdk_watchdog"))
            native = [f for f in os.listdir(os.path.join(tmp, "agent_sdk_watchdog")) if f.startswith("_native")]
            self.assertTrue(native, "the installed package carries its extension")
            code = (
                "import sys, sysconfig, agent_sdk_watchdog as w\n"
                "assert 'agent_sdk_watchdog._native' not in sys.modules, 'imported eagerly'\n"
                "sysconfig.get_paths(); sysconfig.get_paths('posix_user')  # read before posing as macOS\n"
                "sys.platform = 'darwin'\n"
                "try:\n"
                "    w.sdk_options(claude='/bin/true', plugin=False)\n"
                "except FileNotFoundError as e:\n"
                "    print('helper:', e)\n"
                "sys.modules['agent_sdk_watchdog._native'] = None; w.__dict__.pop('_native', None)\n"
                "try:\n"
                "    w.create_watchdog\n"
                "except ImportError as e:\n"
                "    print('api:', e)\n"
            )
            empty = os.path.join(tmp, "bin")
            os.mkdir(empty)
            out = subprocess.run(
                [sys.executable, "-S", "-c", code],
                cwd=tmp,
                env={"PATH": empty, "PYTHONPATH": tmp},
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            self.assertEqual(len(lines), 2, out.stdout)
            self.assertTrue(lines[0].startswith("helper: claude-watchdog is not installed here"), lines[0])
            self.assertIn("built for Linux x86-64 and arm64 (glibc or musl) and Windows x86-64 only, not darwin", lines[0])
            self.assertIn("the in-process API (create_watchdog, create_rate_limit_monitor) works without it", lines[0])
            self.assertNotIn("reinstall", lines[0].lower())
            self.assertTrue(lines[1].startswith("api: agent_sdk_watchdog.create_watchdog needs the in-process extension"), lines[1])

    def test_finds_agent_watchdog_too_and_refuses_other_names(self):
        self.assertTrue(w.cli_path("agent-watchdog").endswith("/agent-watchdog"))
        with self.assertRaises(ValueError):
            w.cli_path("claude")

    def test_agent_watchdog_runs(self):
        out = subprocess.run([w.cli_path("agent-watchdog"), "--help"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("replay", out.stdout)


class Env(unittest.TestCase):
    def test_maps_every_policy_field_to_its_variable(self):
        env = w.watchdog_env(
            idle="5m",
            no_progress=90,
            startup=datetime.timedelta(minutes=2),
            linger=1.5,
            ceiling="2h",
            grace=0,
            extend_factor=1,
            high_utilization=0.95,
            warn_at=0.5,
            write_tools=["Write", "Bash"],
            record="/tmp/run.capture.jsonl",
            summary="/tmp/summary.json",
            claude="/opt/claude",
        )
        self.assertEqual(
            env,
            {
                "AGENT_WATCHDOG_IDLE": "5m",
                "AGENT_WATCHDOG_NO_PROGRESS": "90",
                "AGENT_WATCHDOG_STARTUP": "120",
                "AGENT_WATCHDOG_LINGER": "1.5",
                "AGENT_WATCHDOG_CEILING": "2h",
                "AGENT_WATCHDOG_GRACE": "0",
                "AGENT_WATCHDOG_EXTEND_FACTOR": "1",
                "AGENT_WATCHDOG_HIGH_UTILIZATION": "0.95",
                "AGENT_WATCHDOG_WARN_AT": "0.5",
                "AGENT_WATCHDOG_WRITE_TOOLS": "Write,Bash",
                "AGENT_WATCHDOG_RECORD": "/tmp/run.capture.jsonl",
                "AGENT_WATCHDOG_SUMMARY": "/tmp/summary.json",
                "AGENT_WATCHDOG_CLAUDE": "/opt/claude",
            },
        )
        self.assertEqual(w.watchdog_env(), {}, "nothing set, nothing added: the defaults apply")

    def test_bad_values_are_refused_with_the_field_name(self):
        for kwargs in (
            {"idle": 0},
            {"idle": -1},
            {"idle": datetime.timedelta(0)},
            {"idle": ""},
            {"idle": True},
            {"idle": float("inf")},
            {"grace": -1},
            {"extend_factor": "2"},
            {"write_tools": "Write"},
            {"write_tools": ["Write,Edit"]},
        ):
            with self.subTest(kwargs=kwargs):
                key = next(iter(kwargs))
                with self.assertRaisesRegex((TypeError, ValueError), key):
                    w.watchdog_env(**kwargs)

    def test_sdk_options_merge_the_policy_over_the_callers_env(self):
        opts = w.sdk_options(
            env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "AGENT_WATCHDOG_IDLE": "1h"}, idle="4s", plugin=False
        )
        self.assertEqual(set(opts), {"cli_path", "env", "plugins"})
        self.assertEqual(opts["cli_path"], w.cli_path())
        self.assertEqual(
            opts["env"],
            {
                "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",
                "AGENT_WATCHDOG_IDLE": "4s",
                "AGENT_WATCHDOG_CLAUDE": w.sdk_claude(),
            },
        )


def bundled_claude() -> str:
    """Where the installed SDK keeps its claude, found independently of the helper."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    assert spec is not None, "claude-agent-sdk must be installed in this environment"
    return os.path.join(list(spec.submodule_search_locations)[0], "_bundled", "claude")


class TheClaudeTheSdkWouldRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.fake_dir = os.path.join(self.tmp.name, "bin")
        os.mkdir(self.fake_dir)
        self.fake = fake_claude(self.fake_dir)

    def test_the_sdks_bundled_claude_comes_first_even_with_another_on_path(self):
        self.assertTrue(os.access(bundled_claude(), os.X_OK), "the registry wheel bundles claude")
        with mock.patch.dict(os.environ, {"PATH": self.fake_dir + os.pathsep + os.environ["PATH"]}):
            self.assertEqual(shutil.which("claude"), self.fake)
            self.assertEqual(w.sdk_claude(), bundled_claude())
            self.assertEqual(w.sdk_options()["env"]["AGENT_WATCHDOG_CLAUDE"], bundled_claude())

    def test_the_bundled_claude_is_the_sdks_version(self):
        out = subprocess.run([w.sdk_claude(), "--version"], capture_output=True, text=True, timeout=60)
        with open(bundled_claude() + ".version") as f:
            self.assertEqual(out.stdout.split()[0], f.read().split()[0])

    def test_without_the_sdk_it_falls_back_to_path(self):
        with mock.patch.object(importlib.util, "find_spec", return_value=None), mock.patch.dict(
            os.environ, {"PATH": self.fake_dir}
        ):
            self.assertEqual(w.sdk_claude(), self.fake)

    def test_nothing_found_names_what_was_looked_for_and_where(self):
        empty = os.path.join(self.tmp.name, "empty")
        os.mkdir(empty)
        with mock.patch.object(importlib.util, "find_spec", return_value=None), mock.patch.dict(
            os.environ, {"PATH": empty}
        ):
            with self.assertRaises(FileNotFoundError) as e:
                w.sdk_claude()
            msg = str(e.exception)
            self.assertIn("_bundled/claude", msg)
            self.assertIn("claude_agent_sdk is not installed", msg)
            self.assertIn(f"claude on PATH ({empty})", msg)
            with self.assertRaises(FileNotFoundError):
                w.sdk_options()
            # An explicit claude needs no lookup.
            self.assertEqual(w.sdk_options(claude=self.fake)["env"]["AGENT_WATCHDOG_CLAUDE"], self.fake)

    def test_an_explicit_claude_wins(self):
        self.assertEqual(w.sdk_options(claude="/opt/claude")["env"]["AGENT_WATCHDOG_CLAUDE"], "/opt/claude")
        opts = w.sdk_options(env={"AGENT_WATCHDOG_CLAUDE": "/opt/mine"})
        self.assertEqual(opts["env"]["AGENT_WATCHDOG_CLAUDE"], "/opt/mine")
        with mock.patch.dict(os.environ, {"AGENT_WATCHDOG_CLAUDE": "/opt/exported"}):
            # Left to the environment the Python SDK merges env over.
            self.assertNotIn("AGENT_WATCHDOG_CLAUDE", w.sdk_options()["env"])


class Plugin(unittest.TestCase):
    def test_the_wheel_carries_the_repositorys_plugin(self):
        path = w.plugin_path()
        self.assertTrue(path.startswith(os.path.dirname(w.__file__)), path)
        with open(os.path.join(path, ".claude-plugin", "plugin.json")) as f:
            self.assertEqual(json.load(f)["name"], "agent-watchdog-subagents")
        for rel in (".claude-plugin/plugin.json", "hooks/hooks.json"):
            with open(os.path.join(path, rel)) as a, open(os.path.join(REPO, "plugin", rel)) as b:
                self.assertEqual(a.read(), b.read(), rel)

    def test_on_by_default_with_the_packaged_agent_watchdog_for_its_hooks(self):
        opts = w.sdk_options()
        self.assertEqual(opts["plugins"], [{"type": "local", "path": w.plugin_path()}])
        self.assertEqual(opts["env"]["AGENT_WATCHDOG_BIN"], w.cli_path("agent-watchdog"))
        mine = {"type": "local", "path": "/opt/my-plugin"}
        self.assertEqual(w.sdk_options(plugins=[mine])["plugins"], [mine, opts["plugins"][0]])
        self.assertEqual(
            w.sdk_options(env={"AGENT_WATCHDOG_BIN": "/opt/aw"})["env"]["AGENT_WATCHDOG_BIN"], "/opt/aw"
        )

    def test_one_keyword_turns_it_off(self):
        opts = w.sdk_options(plugin=False)
        self.assertEqual(opts["plugins"], [])
        self.assertNotIn("AGENT_WATCHDOG_BIN", opts["env"])
        self.assertEqual(w.sdk_options(plugin=False, plugins=[{"type": "local", "path": "/p"}])["plugins"],
                         [{"type": "local", "path": "/p"}])
        with self.assertRaises(TypeError):
            w.sdk_options(plugin="no")

    def test_the_sdk_accepts_what_the_helper_returns(self):
        from claude_agent_sdk import ClaudeAgentOptions

        o = ClaudeAgentOptions(**w.sdk_options(idle="5m"), include_partial_messages=True)
        self.assertEqual(o.cli_path, w.cli_path())
        self.assertEqual(o.plugins, [{"type": "local", "path": w.plugin_path()}])
        self.assertEqual(o.env["AGENT_WATCHDOG_IDLE"], "5m")


SENTENCE = "agent-watchdog killed the session (no_progress): keep-alives only for 12s."
SYNTHETIC = {
    "type": "result",
    "subtype": "error_during_execution",
    "is_error": True,
    "terminal_reason": "watchdog_no_progress",
    "result": SENTENCE,
    "session_id": "s",
}


class WatchdogKill(unittest.TestCase):
    def test_reads_our_synthetic_result_as_a_dict(self):
        self.assertEqual(w.watchdog_kill(SYNTHETIC), w.WatchdogKill(kind="no_progress", reason=SENTENCE))
        k = w.watchdog_kill(dict(SYNTHETIC, terminal_reason="watchdog_idle"))
        self.assertEqual((k.kind, k.reason), ("idle", SENTENCE))

    def test_reads_the_sdks_result_message(self):
        from claude_agent_sdk import ResultMessage

        msg = ResultMessage(
            subtype="error_during_execution",
            duration_ms=1,
            duration_api_ms=0,
            is_error=True,
            num_turns=0,
            session_id="s",
            result=SENTENCE,
            terminal_reason="watchdog_linger",
        )
        self.assertEqual(w.watchdog_kill(msg), w.WatchdogKill("linger", SENTENCE))
        ok = ResultMessage(
            subtype="success", duration_ms=1, duration_api_ms=0, is_error=False, num_turns=1, session_id="s",
            result="done", terminal_reason="completed",
        )
        self.assertIsNone(w.watchdog_kill(ok))

    def test_anything_else_is_none_never_an_error(self):
        for m in (
            {"type": "result", "subtype": "success", "is_error": False, "result": "ok", "terminal_reason": "completed"},
            # Claude Code's own error_during_execution: not ours.
            dict(SYNTHETIC, terminal_reason="aborted_tools"),
            dict(SYNTHETIC, terminal_reason=None),
            dict(SYNTHETIC, terminal_reason="watchdog_"),
            dict(SYNTHETIC, is_error="true"),
            dict(SYNTHETIC, subtype="success"),
            dict(SYNTHETIC, result=None),
            dict(SYNTHETIC, result=["x"]),
            dict(SYNTHETIC, type="assistant"),
            {k: v for k, v in SYNTHETIC.items() if k != "terminal_reason"},
            {},
            None,
            "result",
            42,
            [SYNTHETIC],
        ):
            with self.subTest(message=m):
                self.assertIsNone(w.watchdog_kill(m))


class TheBinaryAcceptsWhatTheHelperWrites(unittest.TestCase):
    def run_drop_in(self, **policy):
        with tempfile.TemporaryDirectory() as tmp:
            env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp}
            env.update(w.sdk_options(claude=fake_claude(tmp), **policy)["env"])
            return subprocess.run(
                [w.cli_path(), "-p", "hi", "--output-format", "stream-json", "--verbose"],
                capture_output=True,
                text=True,
                env=env,
                stdin=subprocess.DEVNULL,
                timeout=60,
            )

    def test_every_field_is_read_and_the_run_passes_through(self):
        out = self.run_drop_in(
            idle=datetime.timedelta(seconds=30),
            no_progress=120,
            startup="1m",
            linger=60.5,
            ceiling="1h",
            grace=0,
            extend_factor=1,
            high_utilization=0.95,
            warn_at=0.5,
            write_tools=["Write", "Edit"],
        )
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn('"subtype":"success"', out.stdout)

    def test_an_out_of_range_value_is_refused_naming_the_setting(self):
        # By the helper, with the rule the drop-in reads the variable by...
        with self.assertRaisesRegex(ValueError, "high_utilization: must be a number in \\[0, 1\\], got 1.5"):
            w.sdk_options(claude="/bin/true", high_utilization=1.5)
        # ... and by the drop-in, for a variable set by hand: a usage error.
        with tempfile.TemporaryDirectory() as tmp:
            env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp, "AGENT_WATCHDOG_CLAUDE": fake_claude(tmp)}
            env["AGENT_WATCHDOG_HIGH_UTILIZATION"] = "1.5"
            out = subprocess.run(
                [w.cli_path(), "-p", "hi", "--output-format", "stream-json", "--verbose"],
                capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=60,
            )
        self.assertEqual(out.returncode, 2, out.stdout)
        self.assertIn("AGENT_WATCHDOG_", out.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2, argv=[sys.argv[0]])

"""The installed package's helper, run by scripts/test-packages with the Python of a fresh
virtual environment the wheel was installed into (stdlib unittest, no other dependency)."""

import datetime
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import unittest

import agent_sdk_watchdog as w


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
                "AGENT_WATCHDOG_NO_PROGRESS": "90.0",
                "AGENT_WATCHDOG_STARTUP": "120.0",
                "AGENT_WATCHDOG_LINGER": "1.5",
                "AGENT_WATCHDOG_CEILING": "2h",
                "AGENT_WATCHDOG_GRACE": "0.0",
                "AGENT_WATCHDOG_EXTEND_FACTOR": "1.0",
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
        opts = w.sdk_options(env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "AGENT_WATCHDOG_IDLE": "1h"}, idle="4s")
        self.assertEqual(set(opts), {"cli_path", "env"})
        self.assertEqual(opts["cli_path"], w.cli_path())
        self.assertEqual(
            opts["env"], {"ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "AGENT_WATCHDOG_IDLE": "4s"}
        )


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

    def test_an_out_of_range_value_is_a_usage_error_naming_the_setting(self):
        out = self.run_drop_in(high_utilization=1.5)
        self.assertEqual(out.returncode, 2, out.stdout)
        self.assertIn("AGENT_WATCHDOG_", out.stderr)
        self.assertIn("--high-utilization", out.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2, argv=[sys.argv[0]])

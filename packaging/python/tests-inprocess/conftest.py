"""Fixtures for the in-process API's tests, run by packaging/python/test-wheel against the
wheel installed in a fresh virtual environment.

The end-to-end tests need the mock Messages API server (crates/mock-api, example `serve`:
WATCHDOG_TEST_MOCK_SERVE), the real Claude Code CLI (CLAUDE_BIN) and the Python Agent SDK
(importable). A missing one fails the test with what to run; nothing is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest


def required_env(name: str, what: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: {what} (packaging/python/test-wheel sets it)", pytrace=False)
    return value


class Mock:
    """A running mock server and the environment of a claude run against it."""

    def __init__(self, proc: subprocess.Popen, info: Dict) -> None:
        self.proc = proc
        self.base_url: str = info["base_url"]
        self.cwd: str = info["cwd"]
        self.env: Dict[str, str] = info["env"]
        self.session_root = str(Path(self.env["TMPDIR"]).parent)

    def processes(self) -> List[Tuple[int, str]]:
        """Processes (not this one) whose environment or command line names this run's session
        directory: the CLI and every child it started."""
        needle = self.session_root.encode()
        me = os.getpid()
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in (me, self.proc.pid):
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    environ = f.read()
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read()
                with open(f"/proc/{entry}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[-1].split()[0]
            except OSError:
                continue
            if state == b"Z":
                continue
            if needle in environ or needle in cmdline:
                found.append((int(entry), cmdline.replace(b"\0", b" ").decode(errors="replace")))
        return found

    def claude_processes(self, wait: float = 1.0) -> List[Tuple[int, str]]:
        """The session's claude processes still alive (waits up to `wait` for exits)."""
        deadline = time.monotonic() + wait
        while True:
            left = [p for p in self.processes() if "claude" in p[1]]
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(0.05)

    def cleanup(self) -> None:
        for pid, _ in self.processes():
            try:
                os.kill(pid, 9)
            except OSError:
                pass


@pytest.fixture
def mock() -> Iterator:
    serve = required_env("WATCHDOG_TEST_MOCK_SERVE", "the mock server example binary")
    started: List[Mock] = []

    def start(scenario: str, *flags: str) -> Mock:
        proc = subprocess.Popen(
            [serve, scenario, *flags], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        line = proc.stdout.readline()
        if not line:
            pytest.fail(f"the mock server ({serve}) printed nothing", pytrace=False)
        m = Mock(proc, json.loads(line))
        started.append(m)
        return m

    yield start
    for m in started:
        m.cleanup()
        m.proc.stdin.close()
        m.proc.wait(timeout=10)


@pytest.fixture
def claude_bin() -> str:
    path = required_env("CLAUDE_BIN", "the real Claude Code CLI (scripts/install-claude)")
    if not os.access(path, os.X_OK):
        pytest.fail(f"CLAUDE_BIN={path} is not executable", pytrace=False)
    return path

"""The warning filter shows each listed category once per process. Each case runs in a fresh
interpreter (the filter is process-wide and installs once)."""

import subprocess
import sys
import textwrap


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )


def test_the_sdks_shadowed_warning_is_shown_once_and_the_rest_are_counted():
    r = run(
        """
        import warnings
        import agent_sdk_watchdog as w
        from agent_sdk_watchdog.inprocess import suppressed_warnings
        from claude_agent_sdk import CanUseToolShadowedWarning
        assert w.install_sdk_warning_filter() is True
        for i in range(5):
            warnings.warn(f"canUseTool will not be invoked for: tool{i}", CanUseToolShadowedWarning)
        warnings.warn("something else", UserWarning)
        warnings.warn("something else again", UserWarning)
        print("suppressed", suppressed_warnings(CanUseToolShadowedWarning))
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("CanUseToolShadowedWarning") == 1, r.stderr
    assert "tool0" in r.stderr and "tool1" not in r.stderr
    assert r.stderr.count("UserWarning: something else") == 2, "other warnings pass untouched"
    assert r.stdout.strip() == "suppressed 4"


def test_a_named_category_and_on_first_and_install_once():
    r = run(
        """
        import warnings
        import agent_sdk_watchdog as w
        class Mine(DeprecationWarning):
            pass
        class Sub(Mine):
            pass
        firsts = []
        assert w.install_sdk_warning_filter(categories=[Mine], on_first=lambda m, c: firsts.append((str(m.message), c)))
        assert w.install_sdk_warning_filter(categories=[UserWarning]) is False, "a second call changes nothing"
        for i in range(3):
            warnings.warn(f"mine {i}", Mine)
            warnings.warn(f"sub {i}", Sub)
        warnings.warn("user", UserWarning)
        print(firsts)
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[('mine 0', '__main__.Mine')]", r.stdout
    assert "Mine" not in r.stderr and "Sub" not in r.stderr, "the library printed nothing for them"
    assert "UserWarning: user" in r.stderr

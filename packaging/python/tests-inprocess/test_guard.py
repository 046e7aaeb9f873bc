"""guard() with the real timer: a kill ends the loop while the source never yields again, and
the source's generator is closed (its cleanup runs), under asyncio and trio."""

import time

import anyio
import pytest

import agent_sdk_watchdog as w


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_kill_ends_the_loop_of_a_source_that_never_yields_again(backend):
    closed = []

    async def source():
        try:
            yield {"type": "system", "subtype": "init", "session_id": "s"}
            await anyio.sleep_forever()
            yield None  # pragma: no cover
        finally:
            closed.append(True)

    async def main():
        wd = w.create_watchdog(idle=0.3, extend_factor=1)
        got = []
        with wd.register() as h:
            t0 = time.monotonic()
            with pytest.raises(w.WatchdogKilled) as e:
                async for m in h.guard(source()):
                    got.append(m)
            took = time.monotonic() - t0
        return got, e.value, took

    got, killed, took = anyio.run(main, backend=backend)
    assert len(got) == 1
    assert killed.kind == "idle" and killed.kill.since_progress == pytest.approx(0.3)
    assert 0.3 <= took < 1.0, took
    assert closed == [True], "the source's generator was not closed"


def test_a_source_that_ends_ends_the_loop_and_nothing_is_killed():
    async def source():
        for i in range(3):
            yield {"type": "stream_event", "event": {"type": "content_block_delta"}}

    async def main():
        wd = w.create_watchdog(idle=5)
        with wd.register() as h:
            return [m async for m in h.guard(source())], h.kill

    got, kill = anyio.run(main)
    assert len(got) == 3 and kill is None


def test_a_kill_during_the_loop_body_ends_the_loop_at_the_next_message():
    async def source():
        for _ in range(10):
            yield {"type": "stream_event", "event": {"type": "content_block_delta"}}

    async def main():
        wd = w.create_watchdog(idle=0.2, extend_factor=1)
        seen = 0
        with wd.register() as h:
            with pytest.raises(w.WatchdogKilled):
                async for _ in h.guard(source()):
                    seen += 1
                    time.sleep(0.4)  # the body blocks the loop past the deadline
        return seen

    assert anyio.run(main) == 1


def test_close_stops_the_timer_and_a_later_register_starts_a_new_one():
    wd = w.create_watchdog(idle=0.2, extend_factor=1)
    a = wd.register()
    a.observe({"type": "system", "subtype": "init", "session_id": "s"})
    timer = wd._thread
    assert timer is not None and timer.is_alive()
    wd.close()
    timer.join(1.0)
    assert not timer.is_alive(), "close() ends the timer thread"
    time.sleep(0.3)
    assert a.kill is None, "a closed watchdog kills nothing"
    b = wd.register()
    b.observe({"type": "system", "subtype": "init", "session_id": "s"})
    deadline = time.monotonic() + 2
    while b.kill is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert b.kill is not None and b.kill.kind == "idle"
    wd.close()


def test_the_timer_thread_ends_when_the_last_query_unregisters():
    wd = w.create_watchdog(idle=60)
    h = wd.register()
    timer = wd._thread
    h.unregister()
    timer.join(1.0)
    assert not timer.is_alive(), "an empty watchdog keeps no thread"
    with wd.register():
        assert wd._thread is not None and wd._thread.is_alive()

"""The fleet metrics of the in-process API: what a watchdog counts as kills, warnings and ends
are delivered (virtual time, and the real timer through guard()), the Prometheus text read by
the official parser (prometheus_client, pinned by packaging/python/test-wheel), and the
/metrics endpoint of serve_metrics() on loopback: scrapes while sessions are killed, wrong
paths and methods, garbage, silent and oversized clients, the connection cap, a port in use."""

import errno
import http.client
import math
import socket
import threading
import time

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

import agent_sdk_watchdog as w
from test_watchdog import watchdog as virtual  # a watchdog on a virtual clock, and the clock

INIT = {"type": "system", "subtype": "init", "session_id": "s"}
RESULT = {"type": "result", "subtype": "success", "is_error": False, "stop_reason": "end_turn", "session_id": "s"}
ERROR = {"type": "result", "subtype": "error_max_turns", "is_error": True, "session_id": "s"}


def samples(text):
    """{(name, frozenset(labels)): value} of every sample, through the official parser; each
    sample carries the source label."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            assert s.labels.get("agent_watchdog_source") == "run", s
            labels = {k: v for k, v in s.labels.items() if k != "agent_watchdog_source"}
            out[(s.name, frozenset(labels.items()))] = s.value
    return out


def value(parsed, name, **labels):
    return parsed[(name, frozenset(labels.items()))]


def families(text):
    return {f.name: f.type for f in text_string_to_metric_families(text)}


def test_a_fresh_watchdog_has_every_series_at_zero_and_no_utilization():
    wd, _ = virtual()
    m = wd.metrics()
    assert m.sessions == 0 and m.utilization is None
    assert dict(m.kills) == {
        "ceiling": 0, "startup": 0, "linger": 0, "idle": 0, "no_progress": 0, "output_blocked": 0,
        "memory": 0, "task_silent": 0, "wakeup_missed": 0, "unanswered": 0,
    }
    assert dict(m.ended) == {"success": 0, "error_result": 0, "killed": 0, "no_result": 0, "incomplete": 0}
    assert dict(m.stalling_warnings) == {"idle": 0, "no_progress": 0}
    assert dict(m.extensions) == {"high_utilization": 0, "pre_write": 0}
    assert m.kill_lateness.count == 0 and m.kill_lateness.sum == 0
    assert m.kill_lateness.buckets[-1] == (math.inf, 0) and len(m.kill_lateness.buckets) == 11
    text = wd.render_prometheus()
    # The parser drops _total from a counter family's name and types every family.
    assert families(text) == {
        "agent_watchdog_sessions": "gauge",
        "agent_watchdog_session_count": "counter",
        "agent_watchdog_kill_count": "counter",
        "agent_watchdog_stalling_warning_count": "counter",
        "agent_watchdog_extension_count": "counter",
        "agent_watchdog_kill_lateness_seconds": "histogram",
        "agent_watchdog_rate_limit_utilization_ratio": "gauge",
    }
    parsed = samples(text)
    assert value(parsed, "agent_watchdog_kill_count_total", kill_kind="idle") == 0
    assert not any(name == "agent_watchdog_rate_limit_utilization_ratio" for name, _ in parsed)
    assert not any("session_id" in dict(labels) for _, labels in parsed), "no per-session label"


def test_kills_warnings_extensions_and_ends_are_counted_in_virtual_time():
    wd, clock = virtual(idle=60, extend_factor=2, startup=30)
    t0 = clock.t
    idle = wd.register()
    idle.observe(INIT, now=t0)
    quiet = wd.register()  # never says anything: startup kill at t0 + 30
    done = wd.register()
    done.observe(INIT, now=t0)
    done.observe(RESULT, now=t0)
    failed = wd.register()
    failed.observe(INIT, now=t0)
    failed.observe(ERROR, now=t0)
    assert wd.metrics().sessions == 4

    assert [k.kind for k in wd.tick(t0 + 30)] == ["startup"]  # exactly at its deadline
    wd.tick(t0 + 60)  # base idle passed before any write: one pre-write extension
    wd.tick(t0 + 96)  # warn_at 0.8 of the 120 s patience: one idle warning
    kills = wd.tick(t0 + 122)  # the idle kill was due at t0 + 120: delivered 2 s late
    assert [k.kind for k in kills] == ["idle"]

    m = wd.metrics()
    assert (m.kills["startup"], m.kills["idle"], m.kills["ceiling"]) == (1, 1, 0)
    assert m.extensions["pre_write"] >= 1 and m.extensions["high_utilization"] == 0
    assert m.stalling_warnings["idle"] >= 1
    assert m.kill_lateness.count == 2
    assert m.kill_lateness.sum == pytest.approx(2.0)
    buckets = dict(m.kill_lateness.buckets)
    assert buckets[0.0001] == 1, "the startup kill came exactly at its deadline"
    assert buckets[1.0] == 1 and buckets[math.inf] == 2, "the idle kill came 2 s late"
    assert sum(m.ended.values()) == 0, "nothing ended yet"

    assert done.end() == "success"
    assert failed.end() == "error_result"
    assert idle.end() == "killed"
    assert idle.end() == "killed", "idempotent"
    quiet.unregister()  # unregistered without ending: not counted
    assert quiet.end() is None
    m = wd.metrics()
    assert dict(m.ended) == {"success": 1, "error_result": 1, "killed": 1, "no_result": 0, "incomplete": 0}
    assert m.ended_killed["idle"] == 1 and m.ended_killed["startup"] == 0
    assert m.sessions == 3, "ended is not unregistered"
    for h in (idle, done, failed):
        h.unregister()

    parsed = samples(wd.render_prometheus())
    assert value(parsed, "agent_watchdog_sessions") == 0
    assert value(parsed, "agent_watchdog_kill_count_total", kill_kind="startup") == 1
    assert value(parsed, "agent_watchdog_kill_count_total", kill_kind="idle") == 1
    assert value(parsed, "agent_watchdog_session_count_total", outcome="killed", kill_kind="idle") == 1
    assert value(parsed, "agent_watchdog_session_count_total", outcome="success") == 1
    assert value(parsed, "agent_watchdog_session_count_total", outcome="no_result") == 0
    assert value(parsed, "agent_watchdog_kill_lateness_seconds_bucket", le="0.0001") == 1
    assert value(parsed, "agent_watchdog_kill_lateness_seconds_bucket", le="+Inf") == 2
    assert value(parsed, "agent_watchdog_kill_lateness_seconds_count") == 2
    assert value(parsed, "agent_watchdog_kill_lateness_seconds_sum") == pytest.approx(2.0)


def test_the_utilization_gauge_is_the_last_reading_and_high_utilization_extends():
    reading = {"u": None}
    wd, clock = virtual(idle=60, get_utilization=lambda now: reading["u"])
    h = wd.register()
    h.observe(INIT, now=clock.t)
    h.activity("Write", now=clock.t)  # the first write: only high utilization extends now
    reading["u"] = 0.95
    wd.tick(clock.t + 61)
    m = wd.metrics()
    assert m.utilization == 0.95 and m.extensions["high_utilization"] == 1
    parsed = samples(wd.render_prometheus())
    assert value(parsed, "agent_watchdog_rate_limit_utilization_ratio") == 0.95
    reading["u"] = None
    wd.tick(clock.t + 62)
    assert wd.metrics().utilization is None


def test_close_forgets_the_queries_but_not_what_was_counted():
    wd, clock = virtual(startup=10)
    wd.register()
    wd.tick(clock.t + 10)
    wd.close()
    m = wd.metrics()
    assert m.sessions == 0 and m.kills["startup"] == 1


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_guard_ends_the_query_when_its_stream_ends_or_it_is_killed(backend):
    async def finished():
        yield INIT
        yield RESULT

    async def hangs():
        yield INIT
        await anyio.sleep_forever()
        yield None  # pragma: no cover

    async def main():
        wd = w.create_watchdog(idle=0.3, extend_factor=1)
        with wd.register() as h:
            assert [m async for m in h.guard(finished())] == [INIT, RESULT]
        with wd.register() as h:
            with pytest.raises(w.WatchdogKilled):
                async for _ in h.guard(hangs()):
                    pass
        return wd.metrics()

    m = anyio.run(main, backend=backend)
    assert m.ended["success"] == 1 and m.ended["killed"] == 1 and m.ended_killed["idle"] == 1
    assert m.kills["idle"] == 1 and m.sessions == 0
    # The real timer: the kill is delivered soon after its deadline.
    assert m.kill_lateness.count == 1 and m.kill_lateness.sum < 0.5, m.kill_lateness


# --- the endpoint


def request(port, raw, timeout=5.0):
    """Send `raw` bytes, read until the server closes: (status line, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return lines[0], headers, body.decode()


def scrape(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        assert r.status == 200
        assert r.getheader("Content-Type") == "text/plain; version=0.0.4; charset=utf-8"
        return r.read().decode()
    finally:
        conn.close()


def test_a_scrape_is_the_rendering_and_parses():
    wd, clock = virtual(startup=5)
    h = wd.register()
    wd.tick(clock.t + 5)
    h.end()
    with w.serve_metrics(wd, port=0) as server:
        assert server.url == f"http://127.0.0.1:{server.port}/metrics"
        text = scrape(server.port)
        assert text == wd.render_prometheus()
        parsed = samples(text)
        assert value(parsed, "agent_watchdog_kill_count_total", kill_kind="startup") == 1
        assert value(parsed, "agent_watchdog_session_count_total", outcome="killed", kill_kind="startup") == 1
        assert value(parsed, "agent_watchdog_sessions") == 1


def test_paths_methods_head_and_garbage_get_their_status_and_the_endpoint_keeps_serving():
    wd, _ = virtual()
    with w.serve_metrics(wd, port=0) as server:
        p = server.port
        status, headers, body = request(p, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == "HTTP/1.1 404 Not Found" and body == "not found: try /metrics\n"
        status, headers, _ = request(p, b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc")
        assert status == "HTTP/1.1 405 Method Not Allowed" and headers["Allow"] == "GET, HEAD"
        status, headers, body = request(p, b"HEAD /metrics HTTP/1.1\r\n\r\n")
        assert status == "HTTP/1.1 200 OK" and body == "" and int(headers["Content-Length"]) > 1000
        status, _, _ = request(p, b"GET /metrics?x=1 HTTP/1.0\n\n")
        assert status == "HTTP/1.1 200 OK"
        for garbage in (b"\x00\xff\xfe garbage\r\n\r\n", b"GET /metrics SPDY/3\r\n\r\n", b"\r\n\r\n"):
            status, headers, _ = request(p, garbage)
            assert status == "HTTP/1.1 400 Bad Request", garbage
            assert headers["Connection"] == "close"
        status, _, _ = request(p, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n")
        assert status == "HTTP/1.1 431 Request Header Fields Too Large"
        assert samples(scrape(p))


def test_a_silent_client_is_dropped_after_the_timeout_and_others_are_served_meanwhile():
    wd, _ = virtual()
    with w.serve_metrics(wd, port=0, timeout=0.5) as server:
        silent = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        # Half a request line, then nothing.
        silent.sendall(b"GET /met")
        assert samples(scrape(server.port)), "served while the silent client waits"
        t0 = time.monotonic()
        assert silent.recv(1024) == b"", "dropped unanswered"
        assert time.monotonic() - t0 < 4, "dropped by the timeout, not by the test's"
        silent.close()
        assert samples(scrape(server.port))


def test_the_connection_cap_makes_the_next_client_wait_for_a_free_slot():
    wd, _ = virtual()
    with w.serve_metrics(wd, port=0, max_connections=1, timeout=30) as server:
        holder = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        holder.sendall(b"GET /metrics HTTP/1.1\r\n")  # no blank line: holds the one slot
        waiting = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        waiting.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        waiting.settimeout(0.3)
        with pytest.raises(socket.timeout):
            waiting.recv(1)  # not served while the slot is held
        holder.close()  # the slot is free: the waiting client is served
        waiting.settimeout(5)
        assert waiting.recv(15) == b"HTTP/1.1 200 OK"
        waiting.close()


def test_scrapes_while_sessions_are_killed_concurrently_see_the_counts_grow_to_the_total():
    n = 40
    wd = w.create_watchdog(idle=0.2, extend_factor=1)  # the real timer thread
    readings = [[] for _ in range(4)]
    errors = []

    def scraper(port, stop, seen):
        while not stop.is_set():
            try:
                parsed = samples(scrape(port))
                seen.append(value(parsed, "agent_watchdog_kill_count_total", kill_kind="idle"))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
                return

    with w.serve_metrics(wd, port=0) as server:
        stop = threading.Event()
        threads = [threading.Thread(target=scraper, args=(server.port, stop, r)) for r in readings]
        for t in threads:
            t.start()
        handles = []
        for _ in range(n):
            h = wd.register()
            h.observe(INIT)
            handles.append(h)
            time.sleep(0.005)
        deadline = time.monotonic() + 10
        while wd.metrics().kills["idle"] < n and time.monotonic() < deadline:
            time.sleep(0.05)
        for h in handles:
            assert h.end() == "killed"
            h.unregister()
        final = samples(scrape(server.port))
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    assert value(final, "agent_watchdog_kill_count_total", kill_kind="idle") == n
    assert value(final, "agent_watchdog_session_count_total", outcome="killed", kill_kind="idle") == n
    assert value(final, "agent_watchdog_kill_lateness_seconds_count") == n
    assert value(final, "agent_watchdog_sessions") == 0
    for seen in readings:
        assert seen, "every scraper was answered"
        assert seen == sorted(seen), f"a counter went down between two scrapes: {seen}"
        assert all(0 <= v <= n for v in seen), seen


def test_a_port_in_use_is_a_clear_error_and_bad_options_are_refused():
    wd, _ = virtual()
    with w.serve_metrics(wd, port=0) as server:
        with pytest.raises(OSError) as e:
            w.serve_metrics(wd, port=server.port)
        assert e.value.errno == errno.EADDRINUSE
        assert f"cannot listen on 127.0.0.1:{server.port}" in str(e.value)
    for kw, message in [
        ({"port": -1}, "port: must be an integer in [0, 65535], got -1"),
        ({"port": "80"}, "port: must be an integer in [0, 65535], got '80'"),
        ({"timeout": 0}, "timeout: must be a number > 0, got 0"),
        ({"max_head": 0}, "max_head: must be an integer >= 1, got 0"),
        ({"max_connections": 1.5}, "max_connections: must be an integer >= 1, got 1.5"),
    ]:
        with pytest.raises(ValueError) as e:
            w.serve_metrics(wd, **kw)
        assert str(e.value) == message


def test_close_is_idempotent_and_frees_the_port():
    wd, _ = virtual()
    server = w.serve_metrics(wd, port=0)
    port = server.port
    server.close()
    server.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    w.serve_metrics(wd, port=port).close()

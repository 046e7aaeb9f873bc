"""Measures the in-process API (for BENCHMARKS.md), against the installed wheel:

1. observe() per message on real messages (testdata/captures, parsed by the SDK's own
   parse_message) vs what parse_message spends building each message object;
2. kill lateness: the real timer thread, 2,000 queries with deadlines spread over 2 s, the
   time from each kill's deadline to its on_kill, and (asyncio) to a guard()'s
   WatchdogKilled while the source never yields;
3. memory per registered query with 10,000 registered (RSS and tracemalloc).

Usage: python bench_inprocess.py REPO_ROOT   (prints a JSON report)
"""

import asyncio
import gc
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import agent_sdk_watchdog as w
from claude_agent_sdk._internal.message_parser import parse_message

root = Path(sys.argv[1])


def lines():
    out = []
    for name in ["s2_tool", "s1_thinking", "s1_text", "s3_ratelimit_gwjwt", "s6_bidir_hooks"]:
        for raw in (root / "testdata/captures" / f"{name}.capture.jsonl").read_text().splitlines():
            rec = json.loads(raw)
            line = rec.get("line")
            if isinstance(line, dict) and "type" in line:
                out.append(line)
    return out


def per_call(fn, items, rounds):
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for x in items:
            fn(x)
        best = min(best, (time.perf_counter() - t) / len(items))
    return best


def observe_cost():
    dicts = lines()
    objs = [m for m in (parse_message(d) for d in dicts) if m is not None]
    kept = [d for d in dicts if parse_message(d) is not None]
    # The real clock, as a host runs it (limits far away: nothing fires during the run).
    wd = w.create_watchdog(idle="365d", no_progress="365d", startup="365d", linger="365d")
    h = wd.register()
    rounds = 200
    parse = per_call(parse_message, kept, rounds)
    observe = per_call(h.observe, objs, rounds)
    texts = [json.dumps(d) for d in kept]
    decode_parse = per_call(lambda t: parse_message(json.loads(t)), texts, rounds // 4)
    kinds = {}
    for o in objs:
        kinds[type(o).__name__] = kinds.get(type(o).__name__, 0) + 1
    return {
        "messages": len(objs),
        "kinds": kinds,
        "sdk_parse_message_us": round(parse * 1e6, 3),
        "observe_us": round(observe * 1e6, 3),
        "observe_over_parse_percent": round(100 * observe / parse, 2),
        "sdk_json_loads_and_parse_us": round(decode_parse * 1e6, 3),
        "observe_over_loads_and_parse_percent": round(100 * observe / decode_parse, 2),
    }


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def lateness_timer(n=2000):
    wd = w.create_watchdog(idle=1.0, extend_factor=1, warn_at=1)
    late = []
    t0 = time.monotonic()
    handles = []
    for i in range(n):
        h = wd.register(on_kill=lambda k: late.append(time.monotonic() - k.at))
        # Spread the deadlines: a first line at a staggered instant of the past second.
        h.observe({"type": "system", "subtype": "init", "session_id": "s"}, now=t0 + i / n)
        handles.append(h)
    while len(late) < n and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    wd.close()
    ms = [x * 1000 for x in late]
    return {"kills": len(ms), "p50_ms": round(pct(ms, 50), 3), "p99_ms": round(pct(ms, 99), 3),
            "max_ms": round(max(ms), 3)}


async def never_yields():
    await asyncio.Event().wait()
    yield None  # pragma: no cover


async def lateness_guard(n=200):
    wd = w.create_watchdog(idle=0.05, extend_factor=1, warn_at=1)
    late = []
    for _ in range(n):
        h = wd.register()
        h.observe({"type": "system", "subtype": "init", "session_id": "s"})
        try:
            async for _ in h.guard(never_yields()):
                pass
        except w.WatchdogKilled as e:
            late.append(time.monotonic() - e.kill.at)
        h.unregister()
    ms = [x * 1000 for x in late]
    return {"kills": len(ms), "p50_ms": round(pct(ms, 50), 3), "p99_ms": round(pct(ms, 99), 3),
            "max_ms": round(max(ms), 3)}


def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4


def memory(n=10_000):
    wd = w.create_watchdog(now=lambda: 0.0)
    gc.collect()
    tracemalloc.start()
    r0 = rss_kib()
    s0 = tracemalloc.take_snapshot()
    hs = [wd.register(now=0.0) for _ in range(n)]
    for h in hs:
        h.observe({"type": "system", "subtype": "init", "session_id": "s"}, now=0.0)
    gc.collect()
    s1 = tracemalloc.take_snapshot()
    r1 = rss_kib()
    py = sum(st.size_diff for st in s1.compare_to(s0, "filename"))
    tracemalloc.stop()
    return {"registered": len(wd), "rss_per_query_bytes": round((r1 - r0) * 1024 / n),
            "python_heap_per_query_bytes": round(py / n)}


report = {
    "python": sys.version.split()[0],
    "observe": observe_cost(),
    "kill_lateness_timer": lateness_timer(),
    "kill_lateness_guard_asyncio": asyncio.run(lateness_guard()),
    "memory": memory(),
}
print(json.dumps(report, indent=2))

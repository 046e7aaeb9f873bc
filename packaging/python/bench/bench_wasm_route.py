"""The measured choice for the in-process Python API on every platform (issue 36): the native
abi3 extension's observe() against the least a WebAssembly core run through the `wasmtime`
package would cost per message, measured in the same run.

The WebAssembly route cannot read Python objects: each message is serialized (json.dumps),
copied into the module's memory, and a function is called. Here that function does nothing
(it returns the length), so the figure is a lower bound of an observe() on a wasm core; the
native figure is the whole observe(), the core's work included.

Usage: python bench_wasm_route.py REPO_ROOT   (prints a JSON report)
Needs the agent-sdk-watchdog wheel and `wasmtime` installed in the running Python.
"""

import json
import sys
import time
from pathlib import Path

import wasmtime

import agent_sdk_watchdog as w

root = Path(sys.argv[1])

WAT = """
(module
  (memory (export "memory") 1)
  (func (export "observe") (param $ptr i32) (param $len i32) (result i32)
    local.get $len))
"""


def messages():
    out = []
    for name in ["s2_tool", "s1_thinking", "s1_text", "s3_ratelimit_gwjwt", "s6_bidir_hooks"]:
        for raw in (root / "testdata/captures" / f"{name}.capture.jsonl").read_text().splitlines():
            line = json.loads(raw).get("line")
            if isinstance(line, dict) and "type" in line and len(json.dumps(line)) < 60_000:
                out.append(line)
    return out


def per_call(fn, items, rounds):
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for x in items:
            fn(x)
        best = min(best, (time.perf_counter() - t) / len(items))
    return best * 1e6


def main():
    msgs = messages()
    wd = w.create_watchdog(idle="365d", no_progress="365d", startup="365d", linger="365d")
    h = wd.register()
    native = per_call(h.observe, msgs, 20)

    engine = wasmtime.Engine()
    store = wasmtime.Store(engine)
    inst = wasmtime.Instance(store, wasmtime.Module(engine, WAT), [])
    exports = inst.exports(store)
    observe, memory = exports["observe"], exports["memory"]

    def call_only(_):
        observe(store, 0, 0)

    def serialize_copy_call(m):
        b = json.dumps(m).encode()
        memory.write(store, b, 0)
        observe(store, 0, len(b))

    rounds = 3
    wasm_call = per_call(call_only, msgs, rounds)
    wasm_full = per_call(serialize_copy_call, msgs, rounds)
    print(
        json.dumps(
            {
                "messages": len(msgs),
                "native_observe_us": round(native, 3),
                "wasm_empty_call_us": round(wasm_call, 3),
                "wasm_serialize_copy_call_us": round(wasm_full, 3),
                "ratio_wasm_lower_bound_to_native": round(wasm_full / native, 1),
                "wasmtime": __import__("importlib.metadata").metadata.version("wasmtime"),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()

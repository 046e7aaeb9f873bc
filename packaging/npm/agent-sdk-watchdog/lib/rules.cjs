'use strict';
// The rules behind the helpers (crates/wasm/src/abi/rules.rs), on the package's one
// WebAssembly module (watchdog.wasm, beside this file). Values cross as JSON through the
// module's buffers. CommonJS callers (index.js) get an instance of their own, made on first use,
// so `require()` works on every Node this package supports; the ES modules bind lib/core.mjs's.
const fs = require('node:fs');
const path = require('node:path');

const encoder = new TextEncoder();
const decoder = new TextDecoder();
// A number JSON cannot carry (NaN, ±Infinity) crosses as its text, for the rule to refuse.
const json = (value) => JSON.stringify(value, (_, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v));

/** Throws the rule's error: a TypeError for a value of the wrong type, else a RangeError. */
function ok(out) {
  if (out?.error !== undefined) throw new (out.typeError ? TypeError : RangeError)(out.error);
  return out;
}

/** The rules on the module whose exports `core()` returns. */
function bind(core) {
  const write = (text) => {
    const max = text.length * 3;
    const at = core().input(max); // first: it may grow the memory
    return encoder.encodeInto(text, new Uint8Array(core().memory.buffer, at, max)).written;
  };
  const read = (len) => decoder.decode(new Uint8Array(core().memory.buffer, core().output_ptr(), len));
  const answer = (len) => (len < 0 ? null : JSON.parse(read(len)));
  /** The JSON answer of export `name` to `value` (JSON in the input), after `args`. */
  const call = (name, value, ...args) => answer(core()[name](...args, write(json(value))));
  let tables = null;

  class SdkRun {
    /** One SDK session, folded by the core (watchdog_host::sdk_run): see lib/temporal.mjs. */
    constructor(env, margin) {
      this.index = core().rules_run_new(performance.now(), Date.now(), write(json({ env, margin })));
      if (this.index < 0) throw new RangeError(`invalid watchdog policy: ${read(core().output_len())}`);
    }

    /** Folds a message: `{ progress, interrupted, kill }` (`killed`: the watchdog's kill came). */
    observe(message) {
      const flags = core().rules_run_observe(this.index, write(JSON.stringify(message) ?? 'null'), performance.now());
      this.killed ||= (flags & 4) !== 0;
      return { progress: (flags & 1) !== 0, interrupted: (flags & 2) !== 0, kill: (flags & 4) !== 0 };
    }

    /** Epoch seconds of the last progress, or null. */
    get lastProgress() {
      const ms = core().rules_run_progress(this.index);
      return Number.isNaN(ms) ? null : ms / 1000;
    }

    get sessionId() {
      const len = core().rules_run_session(this.index);
      return len < 0 ? null : read(len);
    }

    /** Runs the host's permission callback `ask` as a human wait (the SDK answers it itself). */
    async asked(ask, args) {
      const id = core().rules_run_asked(this.index, performance.now());
      try {
        return await ask(...args);
      } finally {
        core().rules_run_answered(this.index, id, performance.now());
      }
    }

    alive() {
      return core().rules_run_alive(this.index, performance.now()) === 1;
    }

    /** The stream ended: `{ end, failure, kill, result }`; frees the fold. */
    finish() {
      const out = answer(core().rules_run_finish(this.index, performance.now()));
      core().rules_run_free(this.index);
      return out;
    }
  }

  return {
    SdkRun,
    call,
    /** The continuation prompt, the failure table, the policy's options, the /metrics defaults. */
    tables: () => (tables ??= Object.freeze(answer(core().rules_tables()))),
    /** The answer to a request (`{ status, contentType, allow, body }`; `body` null: the metrics). */
    metricsAnswer: (method, url) => answer(core().rules_metrics_answer(write(`${method} ${url}`))),
    /** The `AGENT_WATCHDOG_*` variables for a policy; unset fields are left out. */
    watchdogEnv(policy = {}) {
      if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) throw new TypeError('policy: expected an object');
      return ok(call('rules_env', policy)).env;
    },
    /**
     * The watchdog's kill, if `message` is the final result claude-watchdog wrote
     * (`subtype: 'error_during_execution'`, `is_error: true`, `terminal_reason: 'watchdog_<kind>'`):
     * `{ kind, reason }`; `null` for any other message or anything malformed. Never throws.
     */
    watchdogKill(message) {
      if (message === null || typeof message !== 'object' || Array.isArray(message)) return null;
      try {
        return call('rules_kill', message);
      } catch {
        return null;
      }
    },
  };
}

let own = null;
const load = () => new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(path.join(__dirname, 'watchdog.wasm'))), {}).exports;
module.exports = { ...bind(() => (own ??= load())), bind, ok };

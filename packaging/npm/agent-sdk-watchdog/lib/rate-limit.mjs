// createRateLimitMonitor(): one reading merged from every rate_limit_event, the reference
// 0.2.0 API on the Rust core's monitor (in the WebAssembly module of ./core.mjs). A reading is
// the SDK's own object: a shallow copy of it (every field kept) with what the core lays over
// it. The merge, the warning (once per monitor at warnAt or above) and the defaults are the
// core's. A frame crosses to the core as JSON text: frames are rare (one per API call at most).
import { core, owned, read, tables, write, writeAll } from './core.mjs';
import { checkOption, resolveOptions } from './options.mjs';

export const RATE_LIMIT_DEFAULTS = Object.freeze({ ...tables.defaults.rateLimit, now: () => Date.now() });
const { rateLimitFrame } = tables;

export function createRateLimitMonitor(config = {}) {
  const c = resolveOptions(RATE_LIMIT_DEFAULTS, config);
  checkOption('warnAt', c.warnAt, 'a number in [0, 1]', (v) => v >= 0 && v <= 1);
  const index = core.rl_new(c.warnAt, write(String(c.fallbackWindow)));
  if (index < 0) throw new RangeError(read(core.output_len()));
  // The module's monitor goes when `self` does: every method below holds it.
  const self = { m: index };
  owned.register(self, { free: core.rl_free, index });
  let held = null;

  function note(info) {
    const top = info.utilization; // a missing info throws here, as the reference's does
    const kind = top == null ? 0 : typeof top === 'number' ? 1 : 2;
    const text = write(JSON.stringify(info) ?? 'null');
    const { set, warn } = JSON.parse(read(core.rl_note(self.m, text, kind, kind === 1 ? top : 0)));
    held = { ...info, ...set };
    return warn ? held : null;
  }

  return {
    note,
    observe: (message) => (message.type === rateLimitFrame ? note(message.rate_limit_info) : null),
    latest: () => held,
    active(now = c.now()) {
      if (held && typeof held.resetsAt === 'number' && core.rl_expired(self.m, held.resetsAt, now)) return null;
      return held;
    },
    reset() {
      core.rl_reset(self.m);
      held = null;
    },
  };
}

/** The reset time as an ISO string, or null without a numeric `resetsAt`. */
export function rateLimitResetIso(reading) {
  if (typeof reading.resetsAt !== 'number') return null;
  const len = core.rl_reset_iso(reading.resetsAt);
  if (len < 0) throw new RangeError('Invalid time value');
  return read(len);
}

/** One line: status, utilization, overage, reset (the core's one-liner). */
export function formatRateLimitReading(reading) {
  const u = reading.utilization;
  const overage = reading.overageStatus ? String(reading.overageStatus) : undefined;
  const reason = reading.overageDisabledReason ? String(reading.overageDisabledReason) : undefined;
  const [statusLen, overageLen, reasonLen] = writeAll([String(reading.status), overage ?? '', reason ?? '']);
  const resetsAt = typeof reading.resetsAt === 'number';
  const len = core.rl_format(
    statusLen,
    u === undefined ? 0 : 1,
    u === undefined ? 0 : Number(u),
    overage === undefined ? -1 : overageLen,
    reason === undefined ? -1 : reasonLen,
    resetsAt ? 1 : 0,
    resetsAt ? reading.resetsAt : 0,
  );
  const line = len < 0 ? null : read(len);
  if (line === null) throw new RangeError('Invalid time value');
  return line;
}

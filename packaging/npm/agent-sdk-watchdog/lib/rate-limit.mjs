// createRateLimitMonitor(): one reading merged from every rate_limit_event, the reference
// 0.2.0 API on the Rust core's rules (in the WebAssembly module of ./core.mjs). A reading is
// the SDK's own object: a shallow copy of it (every field kept) with what the core decides laid
// over it. The merge, the warning (once per monitor at warnAt or above) and the defaults are
// the core's: a frame crosses as the few fields it reads, each as its kind and number.
import { core, owned, read, tables, write, writeAll } from './core.mjs';
import { checkOption, resolveOptions } from './options.mjs';

export const RATE_LIMIT_DEFAULTS = Object.freeze({ ...tables.defaults.rateLimit, now: () => Date.now() });
const { rateLimitFrame } = tables;

// A value as the core reads its kind: 0 undefined or null, 1 a number, 2 another type; an
// overage field's: 0 undefined, 1 given.
const kind = (v) => (v == null ? 0 : typeof v === 'number' ? 1 : 2);
const num = (v) => (typeof v === 'number' ? v : 0);
const given = (v) => (v === undefined ? 0 : 1);
// The `utilization` of a window's `unifiedWindows` entry, read as the reference reads it.
const windowOf = (windows, name) => (typeof windows === 'object' && windows !== null ? windows[name]?.utilization : undefined);

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
    const type = info.rateLimitType;
    const windows = info.unifiedWindows;
    const own = typeof type === 'string' ? windowOf(windows, type) : undefined;
    const fallback = windowOf(windows, c.fallbackWindow);
    const bits = core.rl_note(
      self.m, kind(top), num(top), typeof type === 'string' ? type.length : -1, kind(own), num(own),
      kind(fallback), num(fallback), given(info.overageStatus), given(info.overageDisabledReason),
    );
    const next = { ...info };
    if (bits & 3) next.utilization = (bits & 3) === 1 ? own : fallback;
    if (bits & 4) next.overageStatus = held.overageStatus;
    if (bits & 8) next.overageDisabledReason = held.overageDisabledReason;
    held = next;
    return bits & 16 ? held : null;
  }

  return {
    note,
    observe: (message) => (message.type === rateLimitFrame ? note(message.rate_limit_info) : null),
    latest: () => held,
    active(now = c.now()) {
      if (held && typeof held.resetsAt === 'number' && core.rl_expired(held.resetsAt, now)) return null;
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

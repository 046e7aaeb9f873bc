// createRateLimitMonitor(): one reading merged from every rate_limit_event, the reference
// 0.2.0 API on the Rust core's monitor (in the WebAssembly module of ./core.mjs). A reading is the SDK's own
// object: a shallow copy of it (every field kept) with what the core derives laid over it, the
// utilization and the carried overage fields. A frame crosses to the core as JSON text: frames
// are rare (one per API call at most), so nothing here is hot.
import { core, owned, read, write, writeAll } from './core.mjs';
import { checkOption, resolveOptions } from './options.mjs';

export const RATE_LIMIT_DEFAULTS = Object.freeze({
  warnAt: 0.85,
  fallbackWindow: 'five_hour',
  now: () => Date.now(),
});

export function createRateLimitMonitor(config = {}) {
  const c = resolveOptions(RATE_LIMIT_DEFAULTS, config);
  checkOption('warnAt', c.warnAt, 'a number in [0, 1]', (v) => v >= 0 && v <= 1);
  const index = core.rl_new(c.warnAt, write(String(c.fallbackWindow)));
  if (index < 0) throw new RangeError(read(core.output_len()));
  // The module's monitor goes when `self` does: every method below holds it.
  const self = { m: index };
  owned.register(self, { free: core.rl_free, index });
  let held = null;
  let warned = false;

  function note(info) {
    const top = info.utilization; // a missing info throws here, as the reference's does
    const derived = JSON.parse(read(core.rl_note(self.m, write(JSON.stringify(info) ?? 'null'), c.now())));
    const next = { ...info };
    // The top level wins as given (the reference does not type-check it); else the core's.
    if (top == null && derived.utilization !== undefined) next.utilization = derived.utilization;
    if (info.overageStatus === undefined && derived.overageStatus !== undefined) {
      next.overageStatus = derived.overageStatus;
    }
    if (info.overageDisabledReason === undefined && derived.overageDisabledReason !== undefined) {
      next.overageDisabledReason = derived.overageDisabledReason;
    }
    held = next;
    // The reference's warning: once per monitor until reset().
    if (!warned && typeof held.utilization === 'number' && held.utilization >= c.warnAt) {
      warned = true;
      return held;
    }
    return null;
  }

  return {
    note,
    observe: (message) => (message.type === 'rate_limit_event' ? note(message.rate_limit_info) : null),
    latest: () => held,
    active(now = c.now()) {
      if (held && typeof held.resetsAt === 'number' && core.rl_expired(self.m, held.resetsAt, now)) return null;
      return held;
    },
    reset() {
      core.rl_reset(self.m);
      held = null;
      warned = false;
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

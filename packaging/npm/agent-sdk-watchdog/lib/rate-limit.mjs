// createRateLimitMonitor(): one reading merged from every rate_limit_event, the reference
// 0.2.0 API on the Rust core's monitor (the addon's RateLimitCore). A reading is the SDK's own
// object: a shallow copy of it (every field kept) with what the core derives laid over it, the
// utilization and the carried overage fields. A frame crosses to the core as JSON text: frames
// are rare (one per API call at most), so nothing here is hot.
import { core } from './native.mjs';
import { checkOption, resolveOptions } from './options.mjs';

export const RATE_LIMIT_DEFAULTS = Object.freeze({
  warnAt: 0.85,
  fallbackWindow: 'five_hour',
  now: () => Date.now(),
});

export function createRateLimitMonitor(config = {}) {
  const c = resolveOptions(RATE_LIMIT_DEFAULTS, config);
  checkOption('warnAt', c.warnAt, 'a number in [0, 1]', (v) => v >= 0 && v <= 1);
  const native = new (core().addon.RateLimitCore)(c.warnAt, String(c.fallbackWindow));
  let held = null;
  let warned = false;

  function note(info) {
    const top = info.utilization; // a missing info throws here, as the reference's does
    const derived = JSON.parse(native.note(JSON.stringify(info) ?? 'null', c.now()));
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
      if (held && typeof held.resetsAt === 'number' && native.expired(held.resetsAt, now)) return null;
      return held;
    },
    reset() {
      native.reset();
      held = null;
      warned = false;
    },
  };
}

/** The reset time as an ISO string, or null without a numeric `resetsAt`. */
export function rateLimitResetIso(reading) {
  if (typeof reading.resetsAt !== 'number') return null;
  const iso = core().addon.rateLimitResetIso(reading.resetsAt);
  if (iso === null) throw new RangeError('Invalid time value');
  return iso;
}

/** One line: status, utilization, overage, reset (the core's one-liner). */
export function formatRateLimitReading(reading) {
  const u = reading.utilization;
  const line = core().addon.formatRateLimitReading(
    String(reading.status),
    u === undefined ? undefined : Number(u),
    reading.overageStatus ? String(reading.overageStatus) : undefined,
    reading.overageDisabledReason ? String(reading.overageDisabledReason) : undefined,
    typeof reading.resetsAt === 'number' ? reading.resetsAt : undefined,
  );
  if (line === null) throw new RangeError('Invalid time value');
  return line;
}

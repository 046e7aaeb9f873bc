// installSdkWarningFilter(): the one piece that must be JavaScript, since the SDK warns through
// the host's own process.emitWarning. Once per process, shared by every copy of the package.
import { resolveOptions } from './options.mjs';

export const SHADOWED_CODE = 'CLAUDE_SDK_CAN_USE_TOOL_SHADOWED';
const INSTALLED = Symbol.for('agent-sdk-watchdog.sdkWarningFilter');

export const WARNING_FILTER_DEFAULTS = Object.freeze({
  codes: Object.freeze([SHADOWED_CODE]),
  onFirst: () => {},
});

export function installSdkWarningFilter(options = {}) {
  const { codes, onFirst } = resolveOptions(WARNING_FILTER_DEFAULTS, options);
  if (process[INSTALLED]) return false;
  process[INSTALLED] = true;
  const original = process.emitWarning.bind(process);
  const swallowed = new Set(codes);
  const seen = new Set();
  process.emitWarning = function emitWarning(warning, typeOrOptions, code, ctor) {
    const found =
      typeof typeOrOptions === 'object' && typeOrOptions !== null
        ? typeOrOptions.code
        : typeof code === 'string'
          ? code
          : undefined;
    if (found !== undefined && swallowed.has(found)) {
      if (!seen.has(found)) {
        seen.add(found);
        try {
          onFirst(warning, found);
        } catch {
          // dropped: this runs inside the caller's emitWarning, often the SDK's own
        }
      }
      return;
    }
    original(warning, typeOrOptions, code, ctor);
  };
  return true;
}

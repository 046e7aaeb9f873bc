// The Rust core, as one WebAssembly module (watchdog.wasm, beside this file): compiled and
// instantiated synchronously at import, on every OS and CPU Node runs on. No imports, no
// platform package. Text crosses through the module's input buffer (`write`) and its output
// buffer (`read`); a tick's records through `records`.
import { readFileSync } from 'node:fs';

const bytes = readFileSync(new URL('./watchdog.wasm', import.meta.url));
const { exports: wasm } = new WebAssembly.Instance(new WebAssembly.Module(bytes), {});
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The module's exports (numbers in, numbers out). */
export const core = wasm;

/** Writes `text` into the module's input buffer; returns its length in bytes. */
export function write(text) {
  const s = String(text);
  // At most 3 bytes per UTF-16 unit; the call reads only the bytes written.
  const max = s.length * 3;
  const at = wasm.input(max);
  return encoder.encodeInto(s, new Uint8Array(wasm.memory.buffer, at, max)).written;
}

/** Writes several strings one after the other; returns their lengths. */
export function writeAll(texts) {
  const all = texts.join('');
  const max = all.length * 3;
  const at = wasm.input(max);
  let offset = 0;
  return texts.map((t) => {
    const n = encoder.encodeInto(t, new Uint8Array(wasm.memory.buffer, at + offset, max - offset)).written;
    offset += n;
    return n;
  });
}

/** The text of `len` bytes the last call left in the output buffer. */
export function read(len) {
  return decoder.decode(new Uint8Array(wasm.memory.buffer, wasm.output_ptr(), len));
}

/** The `n` records (of `RECORD` numbers each) the last tick left. */
export function records(n, stride) {
  return new Float64Array(wasm.memory.buffer, wasm.records_ptr(), n * stride);
}

/** The core's tables: the observe table, effect and verdict codes, kill and extension names. */
export const tables = Object.freeze(JSON.parse(read(wasm.tables())));

// {"type": row, "type/subtype": row} -> Map(type -> row | Map(subtype -> row)); a row is
// { index, effect }.
const observe = new Map();
tables.rows.forEach((r, index) => {
  const row = Object.freeze({ index, effect: r.effect });
  if (r.subtype === null) {
    const seen = observe.get(r.type);
    if (seen instanceof Map) seen.set(undefined, row);
    else observe.set(r.type, row);
  } else {
    let bySubtype = observe.get(r.type);
    if (!(bySubtype instanceof Map)) {
      const any = bySubtype;
      bySubtype = new Map();
      if (any) bySubtype.set(undefined, any);
      observe.set(r.type, bySubtype);
    }
    bySubtype.set(r.subtype, row);
  }
});

/** The observe table's row of a message (`undefined`: the table ignores it). */
export function rowOf(message) {
  const found = observe.get(message.type);
  if (found === undefined || !(found instanceof Map)) return found;
  return found.get(message.subtype) ?? found.get(undefined);
}

/** Frees a module object when its JavaScript owner is collected. */
export const owned = new FinalizationRegistry(({ free, index }) => free(index));

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
  const max = texts.join('').length * 3;
  const at = wasm.input(max);
  let offset = 0;
  return texts.map((t) => {
    const n = encoder.encodeInto(t, new Uint8Array(wasm.memory.buffer, at + offset, max - offset)).written;
    offset += n;
    return n;
  });
}

/** The text of `len` bytes the last call left in the output buffer. */
export const read = (len) => decoder.decode(new Uint8Array(wasm.memory.buffer, wasm.output_ptr(), len));

/** A copy of the `n` records (of `stride` numbers each) the last tick left. */
export const records = (n, stride) => new Float64Array(wasm.memory.buffer, wasm.records_ptr(), n * stride).slice();

/**
 * The core's tables: effect and verdict codes, kill and extension names, the reference preset's
 * defaults, the type of a rate-limit frame.
 */
export const tables = JSON.parse(read(wasm.tables()));

/**
 * A message as the core reads it whole: `row.head` (its type and subtype), then each of
 * `row.fields` (the fields the core declares for its row) the message has, as JSON. Nothing
 * else of the message is read.
 */
export function handOver(row, message) {
  let text = row.head;
  for (let i = 0; i < row.fields.length; i++) {
    const value = message[row.fields[i]];
    const key = row.keys[i];
    const type = typeof value;
    if (type === 'number' || type === 'boolean') text += key + (Number.isFinite(value) || type === 'boolean' ? value : 'null');
    else if (value !== undefined) text += jsonOf(key, value);
  }
  return write(`${text}}`);
}

// A value JSON cannot say (a function, a cycle, a BigInt) is left out.
function jsonOf(key, value) {
  try {
    const json = JSON.stringify(value);
    return json === undefined ? '' : key + json;
  } catch {
    return '';
  }
}

/** Strings to values, looked up by length, then by `===` (a message's fresh strings need no hash). */
export function byLength(pairs) {
  const table = [];
  for (const [key, value] of pairs) (table[key.length] ??= []).push(key, value);
  return table;
}

/** The value of `key` in a `byLength` table (`undefined`: none). */
export function lookup(table, key) {
  if (typeof key !== 'string') return undefined;
  const candidates = table[key.length];
  if (candidates === undefined) return undefined;
  for (let i = 0; i < candidates.length; i += 2) if (candidates[i] === key) return candidates[i + 1];
  return undefined;
}

/** Frees a module object when its JavaScript owner is collected. */
export const owned = new FinalizationRegistry(({ free, index }) => free(index));

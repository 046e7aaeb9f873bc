// The Rust core, as the addon `watchdog.node` in the per-platform package. Loaded on first use,
// so the binary helpers (watchdogOptions & co.) import fine where no platform package exists.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
let loaded = null;

/** `{ addon, table, layout }`: the addon, its observe table and its slab layout. */
export function core() {
  if (loaded) return loaded;
  const pkg = `@agent-sdk-watchdog/${process.platform}-${process.arch}`;
  let file;
  try {
    file = require.resolve(`${pkg}/watchdog.node`);
  } catch {
    throw new Error(
      `${pkg} is not installed: agent-sdk-watchdog ships its native core in per-platform optional ` +
        `dependencies (built so far: linux-x64). Reinstall without --omit=optional / --no-optional.`,
    );
  }
  const addon = require(file);
  const layout = Object.freeze(JSON.parse(addon.slabLayout()));
  // {"type": effect, "type/subtype": effect} -> Map(type -> effect | Map(subtype -> effect))
  const table = new Map();
  for (const [key, effect] of Object.entries(JSON.parse(addon.observeTable()))) {
    const cut = key.indexOf('/');
    if (cut < 0) table.set(key, effect);
    else {
      const type = key.slice(0, cut);
      if (!(table.get(type) instanceof Map)) table.set(type, new Map());
      table.get(type).set(key.slice(cut + 1), effect);
    }
  }
  loaded = { addon, table, layout };
  return loaded;
}

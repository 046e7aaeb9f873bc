// The real TypeScript Agent SDK in streaming-input mode (query() with an async-iterable
// prompt: claude runs with --input-format stream-json and stdin kept open), through the
// claude-watchdog drop-in: turn one, a pause of PAUSE_MS while the "user" thinks, turn two.
// Reports every message as one JSON line on stdout, then {"event":"done",...}.
//
// Environment: SDK_NODE_MODULES, DROP_IN, WORK_DIR, PAUSE_MS; the rest goes to the executable.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.SDK_NODE_MODULES;
const dropIn = process.env.DROP_IN;
if (!modules || !dropIn) {
  console.error('SDK_NODE_MODULES and DROP_IN must be set');
  process.exit(2);
}
const sdk = await import(
  pathToFileURL(path.join(modules, '@anthropic-ai/claude-agent-sdk/sdk.mjs')).href
);

const t0 = Date.now();
const emit = (o) => process.stdout.write(JSON.stringify({ t_ms: Date.now() - t0, ...o }) + '\n');
const pause = Number(process.env.PAUSE_MS || '5000');
let onResult = () => {};
const nextResult = () => new Promise((resolve) => { onResult = resolve; });
const user = (text) => ({
  type: 'user',
  message: { role: 'user', content: text },
  parent_tool_use_id: null,
  session_id: '',
});
async function* prompt() {
  let wait = nextResult();
  yield user('Turn one: say hello.');
  await wait;
  emit({ event: 'thinking', ms: pause });
  await new Promise((r) => setTimeout(r, pause));
  wait = nextResult();
  yield user('Turn two: say hello again.');
  await wait;
}

let count = 0;
let error = null;
try {
  const q = sdk.query({
    prompt: prompt(),
    options: {
      pathToClaudeCodeExecutable: dropIn,
      cwd: process.env.WORK_DIR || process.cwd(),
      env: { ...process.env },
      permissionMode: 'bypassPermissions',
      allowDangerouslySkipPermissions: true,
      stderr: (data) => process.stderr.write(data),
    },
  });
  for await (const m of q) {
    count += 1;
    emit({
      event: 'message',
      type: m.type,
      subtype: m.subtype ?? null,
      terminal_reason: m.terminal_reason ?? null,
      is_error: m.is_error ?? null,
    });
    if (m.type === 'result') onResult();
  }
} catch (e) {
  error = String(e && e.message ? e.message : e);
}
emit({ event: 'done', error, count });

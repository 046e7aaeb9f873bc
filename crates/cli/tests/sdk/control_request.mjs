// The real TypeScript Agent SDK in streaming-input mode through the claude-watchdog drop-in:
// after the first result, the host sends one control request (REQUEST: getContextUsage,
// setPermissionMode or interrupt) and waits for its answer, as an SDK host does. Reports
// every message as one JSON line, the request's outcome ({"event":"request","ok","error",
// "ms"}), then {"event":"done",...}.
//
// Environment: SDK_NODE_MODULES, DROP_IN, WORK_DIR, REQUEST; the rest goes to the executable.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const sdk = await import(
  pathToFileURL(path.join(process.env.SDK_NODE_MODULES, '@anthropic-ai/claude-agent-sdk/sdk.mjs')).href
);
const t0 = Date.now();
const emit = (o) => process.stdout.write(JSON.stringify({ t_ms: Date.now() - t0, ...o }) + '\n');
let onResult = () => {};
const firstResult = new Promise((resolve) => { onResult = resolve; });
let release = () => {};
const ended = new Promise((resolve) => { release = resolve; });
async function* prompt() {
  yield { type: 'user', message: { role: 'user', content: 'Say hello.' }, parent_tool_use_id: null, session_id: '' };
  // Input stays open, as an SDK client's does, until the request is over.
  await ended;
}

let error = null;
let count = 0;
try {
  const q = sdk.query({
    prompt: prompt(),
    options: {
      pathToClaudeCodeExecutable: process.env.DROP_IN,
      cwd: process.env.WORK_DIR || process.cwd(),
      env: { ...process.env },
      permissionMode: 'bypassPermissions',
      allowDangerouslySkipPermissions: true,
      stderr: (data) => process.stderr.write(data),
    },
  });
  const asking = (async () => {
    await firstResult;
    const t = Date.now();
    const name = process.env.REQUEST;
    try {
      if (name === 'getContextUsage') await q.getContextUsage({ detail: 'summary' });
      else if (name === 'setPermissionMode') await q.setPermissionMode('default');
      else if (name === 'interrupt') await q.interrupt();
      else throw new Error(`unknown REQUEST ${name}`);
      emit({ event: 'request', ok: true, error: null, ms: Date.now() - t });
    } catch (e) {
      emit({ event: 'request', ok: false, error: String(e && e.message ? e.message : e), ms: Date.now() - t });
    }
    release();
  })();
  for await (const m of q) {
    count += 1;
    emit({
      event: 'message',
      type: m.type,
      subtype: m.subtype ?? null,
      terminal_reason: m.terminal_reason ?? null,
      result: typeof m.result === 'string' ? m.result : null,
      is_error: m.is_error ?? null,
    });
    if (m.type === 'result') onResult();
  }
  release();
  await asking;
} catch (e) {
  error = String(e && e.message ? e.message : e);
}
emit({ event: 'done', error, count });
process.exit(0);

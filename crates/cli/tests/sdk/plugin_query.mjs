// Drives the real TypeScript Agent SDK's query() against the real claude with the subagent
// plugin loaded the SDK way (`plugins: [{type: "local", path}]`), and reports each message as
// one JSON line on stdout:
//   {"event":"message","type":…,"subtype":…,"result":…,"send_to":[agent ids of SendMessage calls],"plugins":[…]}
//   {"event":"done","error":null|"…","count":n}
//
// Environment: SDK_NODE_MODULES, CLAUDE (the claude binary), PLUGIN_DIR, PROMPT, WORK_DIR;
// everything else (ANTHROPIC_BASE_URL, AGENT_WATCHDOG_*, …) reaches claude unchanged.
// With WATCHDOG_HELPER=1 instead of CLAUDE and PLUGIN_DIR: the options are the installed
// agent-sdk-watchdog's watchdogOptions() defaults (from SDK_NODE_MODULES), nothing else.
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const { SDK_NODE_MODULES: modules, CLAUDE: claude, PLUGIN_DIR: plugin } = process.env;
const helper = process.env.WATCHDOG_HELPER === '1';
if (!modules || (!helper && (!claude || !plugin))) {
  console.error('SDK_NODE_MODULES, and CLAUDE and PLUGIN_DIR or WATCHDOG_HELPER=1, must be set');
  process.exit(2);
}
const sdk = await import(
  pathToFileURL(path.join(modules, '@anthropic-ai/claude-agent-sdk/sdk.mjs')).href
);
const launch = helper
  ? createRequire(path.join(modules, '..', 'package.json'))('agent-sdk-watchdog').watchdogOptions()
  : { pathToClaudeCodeExecutable: claude, env: { ...process.env }, plugins: [{ type: 'local', path: plugin }] };

const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');
let count = 0;
let error = null;
try {
  const q = sdk.query({
    prompt: process.env.PROMPT || 'Delegate the widget report.',
    options: {
      ...launch,
      cwd: process.env.WORK_DIR || process.cwd(),
      permissionMode: 'bypassPermissions',
      allowDangerouslySkipPermissions: true,
      stderr: (data) => process.stderr.write(data),
    },
  });
  for await (const m of q) {
    count += 1;
    const blocks = Array.isArray(m.message?.content) ? m.message.content : [];
    emit({
      event: 'message',
      type: m.type,
      subtype: m.subtype ?? null,
      result: typeof m.result === 'string' ? m.result : null,
      is_error: m.is_error ?? null,
      session_id: m.session_id ?? null,
      top_level: m.parent_tool_use_id == null,
      send_to: blocks
        .filter((b) => b.type === 'tool_use' && b.name === 'SendMessage')
        .map((b) => b.input?.to ?? null),
      plugins: m.plugins ?? null,
    });
  }
} catch (e) {
  error = String(e && e.message ? e.message : e);
}
emit({ event: 'done', error, count });

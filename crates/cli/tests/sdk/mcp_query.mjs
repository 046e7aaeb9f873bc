// Drives the real TypeScript Agent SDK's query() through the installed agent-sdk-watchdog's
// watchdogOptions() with one stdio MCP server (mcp_server.mjs) whose env carries a secret, and
// reports one JSON line on stdout: {"event":"done","error":null|"…","result":…,"mcp":[…]}.
//
// Environment: SDK_NODE_MODULES (the project's node_modules, holding the SDK and our package),
// MCP_SERVER (the server script), PROBE_VALUE (the secret: only the server's config names it
// PROBE_SECRET, so a server that has PROBE_SECRET got it from the config), DELIVERY (empty:
// the helper's choice; `unset`: no mcpServersDelivery at all, as before the helper set it, for
// the control run; else the mcpServersDelivery to set over it).
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const { SDK_NODE_MODULES: modules, MCP_SERVER: server, PROBE_VALUE: secret } = process.env;
if (!modules || !server || !secret) {
  console.error('SDK_NODE_MODULES, MCP_SERVER and PROBE_VALUE must be set');
  process.exit(2);
}
const sdk = await import(pathToFileURL(path.join(modules, '@anthropic-ai/claude-agent-sdk/sdk.mjs')).href);
const { watchdogOptions } = createRequire(path.join(modules, '..', 'package.json'))('agent-sdk-watchdog');

const options = {
  ...watchdogOptions(),
  mcpServers: { probe: { type: 'stdio', command: process.execPath, args: [server], env: { PROBE_SECRET: secret } } },
  stderr: (data) => process.stderr.write(data),
};
if (process.env.DELIVERY === 'unset') delete options.mcpServersDelivery;
else if (process.env.DELIVERY) options.mcpServersDelivery = process.env.DELIVERY;
let error = null;
let result = null;
let mcp = null;
try {
  for await (const m of sdk.query({ prompt: 'Say hello.', options })) {
    if (m.type === 'system' && m.subtype === 'init') mcp = m.mcp_servers ?? null;
    if (m.type === 'result') result = { subtype: m.subtype, is_error: m.is_error };
  }
} catch (e) {
  error = String(e && e.message ? e.message : e);
}
process.stdout.write(JSON.stringify({ event: 'done', error, result, mcp }) + '\n');

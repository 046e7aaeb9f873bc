// The stdio MCP server of ../sdk/mcp_server.mjs, after starting a child of its own that
// outlives nothing on its own (a `ping` that runs for many minutes, its count the marker
// CHILD_MARKER the test finds it by): the watchdog must stop claude, this server and its
// child. Run by Windows' node.exe under wine (crates/cli/tests/windows_wine.rs).
import { spawn } from 'node:child_process';

const marker = process.env.CHILD_MARKER || '900';
spawn('ping.exe', ['-n', marker, '127.0.0.1'], { stdio: 'ignore', windowsHide: true });
await import('../sdk/mcp_server.mjs');

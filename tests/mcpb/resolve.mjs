// The server command of an unpacked MCP Bundle, resolved as a desktop host resolves it: the official
// package's getMcpConfigForManifest (platform overrides, ${__dirname}, the user_config answers).
//
//   node tests/mcpb/resolve.mjs NODE_MODULES BUNDLE_DIR '{"KEY": "answer"}'
//
// prints {"command", "args", "env"} as JSON, or null when a required answer is missing.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, dir, answers] = process.argv.slice(2);
// Installed into an ignored folder at test time, so imported by path (ES modules ignore NODE_PATH).
const entry = path.join(modules, '@anthropic-ai', 'mcpb', 'dist', 'index.js');
const { getMcpConfigForManifest } = await import(pathToFileURL(entry).href);
const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
const config = await getMcpConfigForManifest({
  manifest,
  extensionPath: dir,
  systemDirs: {},
  userConfig: JSON.parse(answers),
  pathSeparator: path.sep,
});
process.stdout.write(JSON.stringify(config ?? null));

// Embedding llmux in your own Node program: the gateway answers under /llm/ on a server you own.
//
//   npm install llmux           (or, in a checkout of llmux: npm run build)
//   node examples/embed.mjs
//
// It starts the server on a free port, sends one chat-completions request to the built-in echo
// model through it, prints the answer and stops.
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway } from 'llmux';

// Where the key store lives; your app would use its own data folder.
const home = mkdtempSync(join(tmpdir(), 'llmux-embed-'));

const gateway = createGateway({
  home,
  // The config file's shape (docs/configuration.md), given as an object; no file is read.
  config: {
    tiers: { basic: { rpm: 120, tpm: 200000, concurrency: 4 } },
    limits: { shutdown_timeout_ms: 5000 },
  },
  // One record per request; here only a short line for finished requests.
  logger: (line) => {
    if ('status' in line) console.log(`[llmux] ${line.method} ${line.path} ${line.status} ${line.duration_ms} ms`);
  },
});

// A key for your app's own use; it is shown once and stored only as a hash.
const { key } = gateway.keys.create({ name: 'my-app', tier: 'basic' });

const server = http.createServer((req, res) => {
  if (req.url?.startsWith('/llm/')) {
    req.url = req.url.slice('/llm'.length);
    gateway.handler(req, res);
    return;
  }
  res.end('the rest of my app\n');
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}/llm/v1`;

const response = await fetch(`${base}/chat/completions`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'Hello from an embedded llmux' }] }),
});
const completion = await response.json();
console.log(`${response.status} ${completion.choices[0].message.content}`);
console.log(`requests left this minute: ${response.headers.get('x-ratelimit-remaining-requests')}`);

await gateway.close();
server.close();
rmSync(home, { recursive: true, force: true });

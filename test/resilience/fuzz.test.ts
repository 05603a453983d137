import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';

/** mulberry32: a small seeded PRNG, so a failure can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEEDS = {
  messages: {
    model: 'llmux-echo',
    max_tokens: 64,
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
    temperature: 0.5,
    stream: false,
    tools: [{ name: 'get_weather', description: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
    tool_choice: { type: 'auto' },
    metadata: { user_id: 'u1' },
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'What is the weather in Paris?' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] },
    ],
  },
  chat: {
    model: 'llmux-echo',
    temperature: 1.2,
    max_tokens: 64,
    stream: false,
    stop: ['\n\n'],
    n: 1,
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
    tool_choice: 'auto',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Weather?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' },
    ],
  },
};

const WEIRD: unknown[] = [
  null, true, false, 0, -1, 1e308, -0, 3.7, '', 'x', 'a'.repeat(100_000), [], [[[[]]]], {}, { __proto__: { polluted: true } },
  Array.from({ length: 5000 }, (_, i) => i), '\u0000\uFFFF\uD800', { constructor: { prototype: { x: 1 } } }, 'user', 'assistant', 'tool',
  { type: 'text' }, { type: 'image' }, { type: 'tool_use' }, { type: 'unknown' },
];

function mutate(value: unknown, rand: () => number, depth = 0): unknown {
  if (depth > 6 || rand() < 0.15) {
    const r = rand();
    if (r < 0.7) return WEIRD[Math.floor(rand() * WEIRD.length)];
    if (r < 0.85) return undefined; // delete
    return JSON.parse(JSON.stringify(value ?? null));
  }
  if (Array.isArray(value)) {
    const copy = value.map((v) => (rand() < 0.3 ? mutate(v, rand, depth + 1) : v)).filter((v) => v !== undefined);
    if (rand() < 0.1) copy.push(mutate(copy[0], rand, depth + 1));
    if (rand() < 0.1) copy.reverse();
    return copy;
  }
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const next = rand() < 0.3 ? mutate(v, rand, depth + 1) : v;
      if (next !== undefined) out[k] = next;
    }
    if (rand() < 0.05) out['__proto__'] = { admin: true };
    if (rand() < 0.05) out[`extra_${Math.floor(rand() * 10)}`] = WEIRD[Math.floor(rand() * WEIRD.length)];
    return out;
  }
  return value;
}

/** Turns a mutated value into request bytes, sometimes broken on purpose. */
function encode(value: unknown, rand: () => number): Buffer {
  let text = JSON.stringify(value) ?? 'null';
  const r = rand();
  if (r < 0.03) text = text.slice(0, Math.floor(rand() * text.length));
  else if (r < 0.05) text = text.replace('{', '{"__proto__":{"x":1},');
  else if (r < 0.06) return Buffer.concat([Buffer.from(text.slice(0, 10)), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from(text.slice(10))]);
  else if (r < 0.07) text = '['.repeat(1000) + text;
  return Buffer.from(text);
}

describe('hostile input', () => {
  let t: TestGateway;
  let agent: http.Agent;
  let key: string;
  before(async () => {
    t = await startTestGateway();
    key = (await t.gateway.keys.create({ name: 'fuzz', tier: 'enterprise', limits: { rpm: 1e9, tpm: 1e12, concurrency: 1000 } })).key;
    agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  });
  after(async () => {
    agent.destroy();
    await t.close();
  });

  function post(path: string, body: Buffer, headers: Record<string, string>): Promise<number> {
    const url = new URL(t.url);
    return new Promise((resolve, reject) => {
      const req = http.request({ agent, hostname: url.hostname, port: url.port, path, method: 'POST', headers: { ...headers, 'content-length': body.length } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 400) {
            // Every refusal is our error body.
            const parsed = JSON.parse(Buffer.concat(chunks).toString()) as { error?: { message?: unknown; type?: unknown; code?: unknown } };
            if (typeof parsed.error?.message !== 'string' || typeof parsed.error.type !== 'string' || typeof parsed.error.code !== 'string') {
              reject(new Error(`status ${status} without our error body`));
              return;
            }
          }
          resolve(status);
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  for (const format of ['messages', 'chat'] as const) {
    it(`answers 10,000 mutated ${format} requests with no 5xx and stays up`, async () => {
      const rand = prng(format === 'messages' ? 0xc0ffee : 0xbadf00d);
      const path = format === 'messages' ? '/v1/messages' : '/v1/chat/completions';
      const headers = format === 'messages'
        ? { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' }
        : { 'content-type': 'application/json', authorization: `Bearer ${key}` };
      const statuses = new Map<number, number>();
      const total = 10_000;
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < total) {
          const i = next++;
          const body = encode(mutate(SEEDS[format], rand), rand);
          const status = await post(path, body, headers);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          assert.ok(status < 500, `request ${i} got ${status}: ${body.subarray(0, 300).toString()}`);
        }
      };
      await Promise.all(Array.from({ length: 16 }, worker));
      const ok = statuses.get(200) ?? 0;
      const refused = statuses.get(400) ?? 0;
      // The mix must exercise both sides: some still valid, most refused.
      assert.ok(ok > 100, `only ${ok} valid requests: ${JSON.stringify([...statuses])}`);
      assert.ok(refused > 1000, JSON.stringify([...statuses]));
      const health = await fetch(`${t.url}/healthz`);
      assert.equal(health.status, 200);
      assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
      assert.equal(({} as Record<string, unknown>)['admin'], undefined);
    });
  }
});

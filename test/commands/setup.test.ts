import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli.ts';
import type { CliIo } from '../../src/commands/io.ts';
import { loadConfig } from '../../src/config/load.ts';
import { createGateway } from '../../src/gateway/server.ts';
import { createKeyStore } from '../../src/auth/key-store.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OPENAI_SECRET = 'sk-proj-SECRET-never-print-1234567890';

function tempHome(): string {
  return mkdtempSync(join(tmpdir(), 'llmux-setup-'));
}

function run(env: Record<string, string | undefined>, stdin?: CliIo['stdin']) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { stdout: (t) => { out.push(t); }, stderr: (t) => { err.push(t); }, env, ...(stdin === undefined ? {} : { stdin }) };
  return { io, out: () => out.join(''), err: () => err.join('') };
}

function keyFrom(stdout: string): string {
  const m = /export OPENAI_API_KEY=(sk-llmux-[A-Za-z0-9_-]{43})/.exec(stdout);
  assert.ok(m, 'the OpenAI lines carry the client key');
  return m[1] as string;
}

/** The config and key work: a gateway from this home answers the key on llmux-echo. */
async function assertWorks(home: string, key: string, env: Record<string, string | undefined> = {}): Promise<void> {
  const gateway = createGateway({ home, env, logger: null });
  const { url } = await gateway.listen(0, '127.0.0.1');
  try {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
  } finally {
    await gateway.close();
  }
}

test('setup by flags writes a 0600 config that loads, a client and an admin key, and the exact lines for tools', async () => {
  const home = tempHome();
  try {
    const r = run({ LLMUX_HOME: home });
    const code = await main(['setup', '--provider', 'openai,anthropic', '--openai-key-env', 'MY_OPENAI', '--key-name', 'laptop', '--tier', 'pro', '--yes'], r.io);
    assert.equal(code, 0, r.err());
    const path = join(home, 'config.json');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    const written = JSON.parse(readFileSync(path, 'utf8'));
    assert.deepEqual(written.providers.openai, { format: 'openai', base_url: 'https://api.openai.com/v1', api_key: 'env:MY_OPENAI' });
    assert.equal(written.providers.anthropic.api_key, 'env:ANTHROPIC_API_KEY');
    const config = loadConfig({ home, env: { MY_OPENAI: 'x' } });
    assert.equal(config.providers['openai']?.apiKey, 'env:MY_OPENAI');

    const out = r.out();
    const key = keyFrom(out);
    assert.ok(out.includes('export ANTHROPIC_BASE_URL=http://127.0.0.1:8686\n'));
    assert.ok(out.includes(`export ANTHROPIC_AUTH_TOKEN=${key}\n`));
    assert.ok(out.includes('export OPENAI_BASE_URL=http://127.0.0.1:8686/v1\n'));
    assert.match(out, /\$MY_OPENAI, which is not set here/);
    const store = createKeyStore(home);
    const client = store.findBySecret(key);
    assert.equal(client?.name, 'laptop');
    assert.equal(client?.tier, 'pro');
    assert.equal(client?.admin, false);
    assert.equal(store.list().filter((k) => k.admin).length, 1, 'an admin key for the dashboard, since there was none');
    await assertWorks(home, key);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('setup keeps an existing config unless --force, and then merges instead of replacing it', async () => {
  const home = tempHome();
  try {
    const path = join(home, 'config.json');
    writeFileSync(path, JSON.stringify({ tiers: { basic: { rpm: 5 } } }));
    const refused = run({ LLMUX_HOME: home });
    assert.equal(await main(['setup', '--provider', 'groq', '--yes'], refused.io), 1);
    assert.match(refused.err(), /already exists; run again with --force/);
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), { tiers: { basic: { rpm: 5 } } });

    const forced = run({ LLMUX_HOME: home });
    assert.equal(await main(['setup', '--provider', 'groq', '--yes', '--force', '--url', 'https://llmux.example/'], forced.io), 0, forced.err());
    const merged = JSON.parse(readFileSync(path, 'utf8'));
    assert.deepEqual(merged.tiers, { basic: { rpm: 5 } });
    assert.equal(merged.providers.groq.api_key, 'env:GROQ_API_KEY');
    assert.ok(forced.out().includes('export OPENAI_BASE_URL=https://llmux.example/v1\n'));
    assert.ok(!/Admin key/.test(forced.out()) || createKeyStore(home).list().filter((k) => k.admin).length === 1);
    // A second run does not make a second admin key.
    assert.equal(createKeyStore(home).list().filter((k) => k.admin).length, 1);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('setup refuses unknown providers and bad flags with exit code 2', async () => {
  const home = tempHome();
  try {
    for (const args of [['--provider', 'skynet'], ['--openai-key-env', 'NOT A NAME'], ['--tier', 'gold'], ['--bogus']]) {
      const r = run({ LLMUX_HOME: home });
      assert.equal(await main(['setup', ...args, '--yes'], r.io), 2, args.join(' '));
    }
    const help = run({ LLMUX_HOME: home });
    assert.equal(await main(['setup', '--help'], help.io), 0);
    assert.match(help.out(), /--openai-key-env VAR|--NAME-key-env VAR/);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('setup answers questions from piped stdin, storing a typed key without ever printing it', async () => {
  const home = tempHome();
  try {
    const stdin = new PassThrough();
    stdin.end(`openai ollama\n${OPENAI_SECRET}\n\nbuild-box\n`);
    const r = run({ LLMUX_HOME: home }, stdin);
    assert.equal(await main(['setup'], r.io), 0, r.err());
    const written = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'));
    assert.equal(written.providers.openai.api_key, OPENAI_SECRET);
    assert.deepEqual(written.providers.ollama, { format: 'openai', base_url: 'http://localhost:11434/v1' });
    assert.ok(!r.out().includes(OPENAI_SECRET) && !r.err().includes(OPENAI_SECRET));
    assert.match(r.err(), /Which providers/);
    const key = keyFrom(r.out());
    assert.equal(createKeyStore(home).findBySecret(key)?.name, 'build-box');
    const config = loadConfig({ home, env: {} });
    assert.equal(config.providers['openai']?.apiKey, OPENAI_SECRET);
    await assertWorks(home, key);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('setup offers Bedrock, Vertex AI and Azure: each question by its flag, each provider written with the model it serves', async () => {
  const home = tempHome();
  try {
    const r = run({ LLMUX_HOME: home, AWS_REGION: 'eu-central-1', GOOGLE_CLOUD_PROJECT: 'my-gcp' });
    const code = await main([
      'setup', '--provider', 'bedrock,vertex,azure', '--bedrock-profile', 'prod', '--vertex-location', 'us-east5',
      '--azure-url', 'https://res.openai.azure.com/openai/v1/', '--azure-deployment', 'gpt-4o-prod', '--yes',
    ], r.io);
    assert.equal(code, 0, r.err());
    const written = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'));
    assert.deepEqual(written.providers.bedrock, { format: 'anthropic', platform: 'bedrock', region: 'eu-central-1', profile: 'prod' });
    assert.deepEqual(written.providers.vertex, { format: 'anthropic', platform: 'vertex', project: 'my-gcp', location: 'us-east5' });
    assert.deepEqual(written.providers.azure, { format: 'openai', platform: 'azure', base_url: 'https://res.openai.azure.com/openai/v1', api_key: 'env:AZURE_OPENAI_API_KEY', responses: true });
    assert.deepEqual(written.models, [
      { id: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', provider: 'bedrock', upstream_id: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' },
      { id: 'claude-sonnet-4-5@20250929', provider: 'vertex', upstream_id: 'claude-sonnet-4-5@20250929' },
      { id: 'gpt-4o-prod', provider: 'azure', upstream_id: 'gpt-4o-prod' },
    ]);
    assert.match(r.out(), /azure reads its key from \$AZURE_OPENAI_API_KEY, which is not set here/);
    const config = loadConfig({ home, env: {} });
    assert.equal(config.providers['vertex']?.baseUrl, 'https://us-east5-aiplatform.googleapis.com');

    // Asked again for a classic Azure resource, typed at the prompts: its model replaces none of the others.
    const stdin = new PassThrough();
    stdin.end('azure\nhttps://res.openai.azure.com/openai\n2025-03-01-preview\nMY_AZ_KEY\nmini-prod\n\n');
    const again = run({ LLMUX_HOME: home }, stdin);
    assert.equal(await main(['setup', '--force'], again.io), 0, again.err());
    const rewritten = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'));
    assert.deepEqual(rewritten.providers.azure, { format: 'openai', platform: 'azure', base_url: 'https://res.openai.azure.com/openai', api_version: '2025-03-01-preview', api_key: 'env:MY_AZ_KEY', responses: true });
    assert.deepEqual(rewritten.models.map((m: { id: string }) => m.id), ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'claude-sonnet-4-5@20250929', 'gpt-4o-prod', 'mini-prod']);
    assert.match(again.err(), /Azure OpenAI: API version of the classic deployments\?/);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('setup with --yes names the flag a platform question needs and writes nothing', async () => {
  const home = tempHome();
  try {
    const r = run({ LLMUX_HOME: home });
    assert.equal(await main(['setup', '--provider', 'vertex', '--yes'], r.io), 2);
    assert.match(r.err(), /--vertex-project is needed: Vertex AI: Google Cloud project id/);
    const bad = run({ LLMUX_HOME: home });
    assert.equal(await main(['setup', '--provider', 'bedrock', '--bedrock-region', 'EU West', '--yes'], bad.io), 2);
    assert.match(bad.err(), /--bedrock-region: "EU West" is not an AWS region/);
    assert.throws(() => readFileSync(join(home, 'config.json')), /ENOENT/);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('on a terminal the key is read in raw mode, with backspace handled and nothing echoed', async () => {
  const home = tempHome();
  try {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, rawCalls: [] as boolean[], setRawMode(raw: boolean) { this.rawCalls.push(raw); return this; } });
    const r = run({ LLMUX_HOME: home }, stdin);
    const done = main(['setup'], r.io);
    stdin.write('anthropic\n');
    // Raw mode: Enter is \r, and the terminal leaves editing to us.
    stdin.write(`${OPENAI_SECRET}X\u007f\r`);
    stdin.write('\n');
    assert.equal(await done, 0, r.err());
    assert.deepEqual(stdin.rawCalls, [true, false]);
    const written = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'));
    assert.equal(written.providers.anthropic.api_key, OPENAI_SECRET);
    assert.ok(!r.out().includes(OPENAI_SECRET) && !r.err().includes(OPENAI_SECRET));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('Ctrl-C at the hidden prompt cancels setup and writes nothing', async () => {
  const home = tempHome();
  try {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode() { return this; } });
    const r = run({ LLMUX_HOME: home }, stdin);
    const done = main(['setup'], r.io);
    stdin.write('openai\n');
    stdin.write('sk-partial\u0003');
    assert.equal(await done, 130);
    assert.throws(() => statSync(join(home, 'config.json')), /ENOENT/);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

const hasScript = spawnSync('script', ['--version']).status === 0;

test('setup through a real pseudo-terminal never echoes the typed key', { skip: hasScript ? false : 'util-linux `script` is not installed' }, async () => {
  const home = tempHome();
  try {
    const cli = join(ROOT, 'src', 'cli.ts');
    const command = `node --import tsx ${JSON.stringify(cli)} setup --key-name pty`;
    const child = spawn('script', ['-qfec', command, '/dev/null'], { cwd: ROOT, env: { ...process.env, LLMUX_HOME: home, OPENAI_API_KEY: '' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let seen = '';
    const waiters: Array<{ text: string; resolve: () => void }> = [];
    child.stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      for (const w of waiters.splice(0)) if (seen.includes(w.text)) w.resolve(); else waiters.push(w);
    });
    const waitFor = (text: string) => new Promise<void>((resolve, reject) => {
      if (seen.includes(text)) return resolve();
      const timer = setTimeout(() => reject(new Error(`no "${text}" from setup; saw: ${seen}`)), 20_000);
      waiters.push({ text, resolve: () => { clearTimeout(timer); resolve(); } });
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      await waitFor('Which providers');
      child.stdin.write('openai\r');
      await waitFor('typing is hidden');
      child.stdin.write(`${OPENAI_SECRET}\r`);
      assert.equal(await exited, 0, seen);
    } finally {
      child.kill();
    }
    assert.ok(!seen.includes(OPENAI_SECRET), 'the terminal showed the key');
    assert.match(seen, /export ANTHROPIC_AUTH_TOKEN=sk-llmux-/);
    const written = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'));
    assert.equal(written.providers.openai.api_key, OPENAI_SECRET);
    const key = /export OPENAI_API_KEY=(sk-llmux-[A-Za-z0-9_-]{43})/.exec(seen)?.[1];
    assert.ok(key);
    await assertWorks(home, key);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

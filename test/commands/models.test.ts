/**
 * `llmux models`: a cloud platform's models are listed only when its credentials resolve; with
 * deployments (llmux.md section 10), each deployment of a model with several,
 * its weight and limits and whether its credentials resolve here; literal aliases as models of
 * their target; the one-provider form printed as before.
 */
import { describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli.ts';
import type { CliIo } from '../../src/cli.ts';

function io(env: Record<string, string | undefined> = {}): CliIo & { out: string; err: string } {
  const state = { out: '', err: '', env, stdout(t: string) { state.out += t; }, stderr(t: string) { state.err += t; } };
  return state;
}

function home(): string {
  const dir = mkdtempSync(join(tmpdir(), 'llmux-models-cli-'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({
    builtin_catalog: false,
    providers: {
      east: { format: 'openai', base_url: 'http://east.invalid/v1', api_keys: ['env:EAST_A', 'env:EAST_B'] },
      west: { format: 'openai', base_url: 'http://west.invalid/v1', api_key: 'env:WEST_KEY' },
    },
    models: [
      { id: 'spread', routing: 'least_busy', deployments: [{ provider: 'east', upstream_id: 'm-1', weight: 3 }, { provider: 'west', upstream_id: 'm-1', weight: 1, rpm: 500, tpm: 2000000 }] },
      { id: 'single', provider: 'east', upstream_id: 'm-2' },
    ],
    aliases: { 'gpt-4o': 'spread', 'old-*': 'single' },
  }));
  return dir;
}

describe('llmux models', () => {
  it('shows each deployment of a model with several, and whether its credentials resolve here', async () => {
    const t = io({ LLMUX_HOME: home(), EAST_B: 'sk-east-b' });
    assert.equal(await main(['models'], t), 0);
    const lines = t.out.split('\n');
    assert.match(lines.find((l) => l.startsWith('spread')) ?? '', /^spread\s+2 deployments\s+ctx \d+\s+least_busy, sticky$/);
    assert.match(t.out, /^ {2}east\/m-1\s+weight 3$/m);
    assert.match(t.out, /^ {2}west\/m-1\s+weight 1 {2}rpm 500 {2}tpm 2000000 {2}\(no credential here\)$/m);
    assert.match(t.out, /^single\s+east\s+ctx \d+$/m);
    assert.match(t.out, /^gpt-4o\s+alias of spread$/m);
    assert.doesNotMatch(t.out, /old-\*/, 'a globbed alias is no model id');
    assert.doesNotMatch(t.out, /sk-east-b/);
  });

  it('gives the deployments in --json', async () => {
    const t = io({ LLMUX_HOME: home(), EAST_A: 'sk-east-a', WEST_KEY: 'sk-west' });
    assert.equal(await main(['models', '--json'], t), 0);
    const list = JSON.parse(t.out) as Array<Record<string, unknown>>;
    const spread = list.find((m) => m['id'] === 'spread');
    assert.deepEqual(spread?.['deployments'], [
      { deployment: 'east/m-1', provider: 'east', upstream_id: 'm-1', weight: 3, usable: true },
      { deployment: 'west/m-1', provider: 'west', upstream_id: 'm-1', weight: 1, rpm: 500, tpm: 2000000, usable: true },
    ]);
    assert.equal(spread?.['routing'], 'least_busy');
    assert.equal(list.find((m) => m['id'] === 'gpt-4o')?.['alias_of'], 'spread');
    assert.equal(list.find((m) => m['id'] === 'single')?.['deployments'], undefined);
  });
});

test('lists a Bedrock model when its credentials resolve, and leaves it out when they do not', async () => {
  const home = mkdtempSync(join(tmpdir(), 'llmux-models-'));
  try {
    writeFileSync(join(home, 'config.json'), JSON.stringify({
      builtin_catalog: false,
      providers: {
        keyed: { format: 'anthropic', platform: 'bedrock', region: 'us-east-1', credentials: { access_key_id: 'env:K', secret_access_key: 'env:S' } },
        bare: { format: 'anthropic', platform: 'bedrock', region: 'us-east-1' },
      },
      models: [{ id: 'claude-keyed', provider: 'keyed', upstream_id: 'a' }, { id: 'claude-bare', provider: 'bare', upstream_id: 'b' }],
    }));
    const env = { LLMUX_HOME: home, K: 'AKIDEXAMPLE', S: 'secret-value-0123', AWS_EC2_METADATA_DISABLED: 'true', AWS_SHARED_CREDENTIALS_FILE: join(home, 'none') };
    const t = io(env);
    assert.equal(await main(['models', '--json'], t), 0, t.err);
    assert.deepEqual((JSON.parse(t.out) as Array<{ id: string }>).map((m) => m.id), ['llmux-echo', 'claude-keyed']);
    assert.ok(!t.out.includes('secret-value-0123') && !t.err.includes('secret-value-0123'));
    const unset = io({ ...env, S: undefined });
    assert.equal(await main(['models', '--json'], unset), 0);
    assert.deepEqual((JSON.parse(unset.out) as Array<{ id: string }>).map((m) => m.id), ['llmux-echo']);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

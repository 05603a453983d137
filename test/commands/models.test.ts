/** `llmux models`: a cloud platform's models are listed only when its credentials resolve. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli.ts';
import type { CliIo } from '../../src/cli.ts';

function io(env: Record<string, string | undefined>): CliIo & { out: string; err: string } {
  const state = { out: '', err: '', env, stdout(t: string) { state.out += t; }, stderr(t: string) { state.err += t; } };
  return state;
}

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

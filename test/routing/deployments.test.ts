import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDeploymentTable, deploymentId } from '../../src/routing/deployments.ts';
import { model } from '../helpers/routing.ts';

describe('deployments', () => {
  it('names a deployment {provider}/{upstream_id}, and a model without deployments has its own one', () => {
    assert.equal(deploymentId('bedrock-us', 'anthropic.claude-sonnet-4-5-v1:0'), 'bedrock-us/anthropic.claude-sonnet-4-5-v1:0');
    const table = createDeploymentTable([]);
    const solo = model('solo', { provider: 'p', upstream_id: 'up' });
    assert.deepEqual(table.of(solo).map((d) => [d.deployment.id, d.weight, d.deployment.rpm]), [['p/up', 1, Infinity]]);
    assert.equal(table.of(solo), table.of(solo));
  });

  it('makes the same pair under two models one deployment, its limits from whichever model gives them', () => {
    const first = model('m1', { deployments: [{ provider: 'p', upstream_id: 'x', weight: 3 }] });
    const second = model('m2', { deployments: [{ provider: 'q', upstream_id: 'y', weight: 1 }, { provider: 'p', upstream_id: 'x', weight: 1, rpm: 500, tpm: 2_000_000 }] });
    const table = createDeploymentTable([first, second]);
    const a = table.of(first)[0]!;
    const b = table.of(second)[1]!;
    assert.equal(a.deployment, b.deployment);
    assert.deepEqual([a.weight, b.weight], [3, 1], 'the weight is the model\'s');
    assert.deepEqual([a.deployment.rpm, a.deployment.tpm], [500, 2_000_000]);
    assert.deepEqual(table.all().map((d) => d.id), ['p/x', 'q/y']);
    assert.equal(table.get('q/y'), table.of(second)[0]!.deployment);
  });
});

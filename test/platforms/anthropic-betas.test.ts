import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BEDROCK_BETAS, VERTEX_BETAS, VERTEX_BODY_BETAS, acceptedBetas, betaValues } from '../../src/platforms/anthropic-betas.ts';

test('a header of several betas is read as clients join them, each once', () => {
  assert.deepEqual(betaValues(' a-1, b-2,,a-1 ,c-3'), ['a-1', 'b-2', 'c-3']);
  assert.deepEqual(betaValues(undefined), []);
  assert.deepEqual(acceptedBetas('c-3,a-1,z-9', new Set(['a-1', 'c-3'])), ['c-3', 'a-1']);
});

test("the defaults keep the betas each platform takes and drop those its users saw refused", () => {
  const bedrock = new Set(BEDROCK_BETAS);
  const vertex = new Set(VERTEX_BETAS);
  for (const beta of ['interleaved-thinking-2025-05-14', 'context-1m-2025-08-07', 'context-management-2025-06-27']) {
    assert.ok(bedrock.has(beta) && vertex.has(beta), beta);
  }
  // Refused by Bedrock (claude-code issues 49370, 56595; CLIProxyAPI 4750) and by Vertex (claude-code 21625, 34802).
  for (const beta of ['claude-code-20250219', 'prompt-caching-scope-2026-01-05', 'oauth-2025-04-20', 'fast-mode-2026-02-01', 'extended-cache-ttl-2025-04-11']) {
    assert.ok(!bedrock.has(beta) && !vertex.has(beta), beta);
  }
  assert.ok(bedrock.has('effort-2025-11-24') && !vertex.has('effort-2025-11-24'), 'effort is taken by Bedrock, refused by Vertex');
  assert.ok([...VERTEX_BODY_BETAS].every((beta) => vertex.has(beta)), 'a beta Vertex takes in the body is one it takes');
});

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { STANDARD_CREDENTIALS, readCredential } from '../../src/common/credentials.ts';
import type { CredentialSource } from '../../src/common/credentials.ts';

/** Gemini's sources (llmux.md section 9): the key header, `?key=`, then bearer. */
const GEMINI: readonly CredentialSource[] = [{ header: 'x-goog-api-key' }, { query: 'key' }, { header: 'authorization', scheme: 'bearer' }];

describe('readCredential', () => {
  it('reads x-api-key before a bearer token, as every format so far does', () => {
    assert.deepEqual(readCredential({ 'x-api-key': ' llmux-a ', authorization: 'Bearer llmux-b' }, '', STANDARD_CREDENTIALS), { source: 'x-api-key', secret: 'llmux-a' });
    assert.deepEqual(readCredential({ authorization: 'bearer  llmux-b' }, '', STANDARD_CREDENTIALS), { source: 'authorization', secret: 'llmux-b' });
    assert.deepEqual(readCredential({}, 'key=llmux-c', STANDARD_CREDENTIALS), { source: null, secret: undefined });
  });

  it('reports a header sent with another scheme as the source, with no key, and looks no further', () => {
    assert.deepEqual(readCredential({ authorization: 'Basic dXNlcg==' }, '', STANDARD_CREDENTIALS), { source: 'authorization', secret: undefined });
  });

  it('reads a query parameter where a format names one, in its place in the order', () => {
    assert.deepEqual(readCredential({}, 'alt=sse&key=llmux-q', GEMINI), { source: '?key', secret: 'llmux-q' });
    assert.deepEqual(readCredential({ 'x-goog-api-key': 'llmux-h' }, 'key=llmux-q', GEMINI), { source: 'x-goog-api-key', secret: 'llmux-h' });
    assert.deepEqual(readCredential({ authorization: 'Bearer llmux-b' }, 'key=', GEMINI), { source: 'authorization', secret: 'llmux-b' });
    assert.deepEqual(readCredential({ 'x-api-key': 'llmux-a' }, '', GEMINI), { source: null, secret: undefined });
  });
});

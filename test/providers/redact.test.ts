import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRedactor, credentialsOf, withLearnedSecrets } from '../../src/providers/redact.ts';
import type { ProviderConfig } from '../../src/config/types.ts';

const provider = (id: string, apiKey: string | undefined, headers: Record<string, string> = {}): ProviderConfig => ({
  id, format: 'chat', baseUrl: 'http://127.0.0.1:1/v1', apiKey, keyless: false, headers,
});

describe('redaction of provider credentials', () => {
  it('takes every configured credential out of a text, JSON-escaped and URL-encoded forms too', () => {
    const redact = createRedactor(['sk-abc/123+xyz', 'short-key', '']);
    assert.equal(redact('bad key sk-abc/123+xyz, also sk-abc\\/123+xyz and sk-abc%2F123%2Bxyz'), 'bad key [redacted], also [redacted] and [redacted]');
    assert.equal(redact('short-key short-keys'), '[redacted] [redacted]s');
    assert.equal(redact('nothing secret here'), 'nothing secret here');
  });

  it('replaces a credential that contains another one whole', () => {
    const redact = createRedactor(['abc', 'xxabcxx']);
    assert.equal(redact('[xxabcxx] [abc]'), '[[redacted]] [[redacted]]');
  });

  it('collects resolved api keys and the values of credential headers, with and without Bearer', () => {
    const providers = [
      provider('a', 'env:A_KEY'),
      provider('b', undefined, { Authorization: 'Bearer tok-123', 'api-key': 'azure-456', 'X-Title': 'llmux', 'HTTP-Referer': 'https://example.test' }),
    ];
    const values = credentialsOf(providers, (p) => (p.id === 'a' ? 'resolved-a' : undefined));
    assert.deepEqual(values.sort(), ['Bearer tok-123', 'azure-456', 'resolved-a', 'tok-123']);
  });

  it('also takes out the secrets learned while running, as they change', () => {
    let learned = ['ya29.first-access-token'];
    const redact = withLearnedSecrets(createRedactor(['sk-configured-key']), () => learned);
    assert.equal(redact('sk-configured-key ya29.first-access-token'), '[redacted] [redacted]');
    learned = ['ya29.second-access-token'];
    assert.equal(redact('ya29.second-access-token%2F ya29.first-access-token'), '[redacted]%2F ya29.first-access-token');
    assert.equal(redact(JSON.stringify({ message: 'token "ya29.second-access-token"' })), '{"message":"token \\"[redacted]\\""}');
  });
});

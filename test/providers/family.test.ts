import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ProviderConfig } from '../../src/config/types.ts';
import { familyOf } from '../../src/providers/family.ts';

function provider(fields: Partial<ProviderConfig>): ProviderConfig {
  return { id: 'p', format: 'chat', baseUrl: 'http://127.0.0.1:1/v1', apiKey: undefined, keyless: true, headers: {}, ...fields };
}

describe('a provider\'s family', () => {
  it('is the config\'s when given, else derived from its format, platform and host', () => {
    assert.equal(familyOf(provider({ family: 'gemini' })), 'gemini');
    assert.equal(familyOf(provider({ format: 'messages', platform: 'bedrock' })), 'anthropic');
    assert.equal(familyOf(provider({ format: 'messages' })), 'anthropic');
    assert.equal(familyOf(provider({ format: 'gemini', baseUrl: 'http://127.0.0.1:1' })), 'gemini');
    assert.equal(familyOf(provider({ platform: 'vertex' })), 'gemini');
    assert.equal(familyOf(provider({ platform: 'azure' })), 'openai');
    assert.equal(familyOf(provider({ baseUrl: 'https://generativelanguage.googleapis.com/v1beta/openai' })), 'gemini');
    assert.equal(familyOf(provider({ baseUrl: 'https://openrouter.ai/api/v1' })), 'openrouter');
    assert.equal(familyOf(provider({ baseUrl: 'https://api.openai.com/v1' })), 'openai');
  });

  it('is the provider alone otherwise, so its state goes back to it only', () => {
    assert.equal(familyOf(provider({ id: 'deepseek', baseUrl: 'https://api.deepseek.com/v1' })), 'provider:deepseek');
    assert.equal(familyOf(provider({ id: 'odd', baseUrl: 'not a url' })), 'provider:odd');
  });
});

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { MIN_RUN, createRedactor, credentialsOf, redactBytes } from '../../src/providers/redact.ts';
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
    const redact = createRedactor(['abcdefgh', 'xxabcdefghxx']);
    assert.equal(redact('[xxabcdefghxx] [abcdefgh]'), '[[redacted]] [[redacted]]');
  });

  it('leaves placeholders shorter than 8 characters (a local server\'s "ollama") in answers', () => {
    const redact = createRedactor(['ollama', 'x', 'none']);
    assert.equal(redact('run it with ollama, or none: x'), 'run it with ollama, or none: x');
  });

  it('collects resolved api keys and the values of credential headers, with and without Bearer', () => {
    const providers = [
      provider('a', 'env:A_KEY'),
      provider('b', undefined, { Authorization: 'Bearer tok-123', 'api-key': 'azure-456', 'X-Title': 'llmux', 'HTTP-Referer': 'https://example.test' }),
    ];
    const values = credentialsOf(providers, (p) => (p.id === 'a' ? 'resolved-a' : undefined));
    assert.deepEqual(values.sort(), ['Bearer tok-123', 'azure-456', 'resolved-a', 'tok-123']);
  });
});

describe('redaction in every encoding the client decodes', () => {
  // Issue 25: each of these reached the client in plain text after decoding.
  const KEY = 'sk-proj-Z3hQv9xTq2LmN8rWb4YcKd7Ue1FjAs6P';
  const redact = createRedactor([KEY]);
  const jsonEscaped = (text: string) => [...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
  const urlEncoded = (text: string) => [...text].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`).join('');

  const cases: Array<[string, string]> = [
    ['plain', KEY],
    ['JSON-escaped, every character', jsonEscaped(KEY)],
    ['JSON-escaped, one character', `\\u0073${KEY.slice(1)}`],
    ['URL-encoded, every character', urlEncoded(KEY)],
    ['URL-encoded, the dashes', KEY.replaceAll('-', '%2D')],
    ['URL-encoded and JSON-escaped mixed', `%73\\u006b${KEY.slice(2)}`],
    ['cut by a character at its end', KEY.slice(0, -1)],
    ['cut by a character at its start', KEY.slice(1)],
    ['a long prefix', KEY.slice(0, 20)],
    ['base64', Buffer.from(KEY).toString('base64')],
    ['base64 inside base64 (Basic auth)', Buffer.from(`user:${KEY}`).toString('base64')],
    ['base64 at the other alignment', Buffer.from(`ab${KEY}`).toString('base64')],
    ['base64url', Buffer.from(`?>${KEY}`).toString('base64url')],
    ['base64 of a cut credential', Buffer.from(KEY.slice(0, -3)).toString('base64')],
  ];
  for (const [encoding, written] of cases) {
    it(`finds it ${encoding}, and replaces what was written`, () => {
      const text = `{"error":{"message":"Incorrect API key provided: ${written} (see docs)"}}`;
      const clean = redact(text);
      assert.match(clean, /\[redacted\]/);
      const decoded = decodeURIComponent(JSON.parse(clean.replace(/%(?![0-9A-F]{2})/g, '%25')).error.message);
      assert.ok(!decoded.includes(KEY.slice(0, MIN_RUN)) && !decoded.includes(KEY.slice(-MIN_RUN)), decoded);
      assert.ok(!Buffer.from(decoded.replace(/[^A-Za-z0-9+/=_-]/g, ' ').split(' ').join(''), 'base64').toString('latin1').includes(KEY.slice(8, 24)), 'no base64 of it left');
      assert.match(clean, /^\{"error":\{"message":"Incorrect API key provided: .*\[redacted\].* \(see docs\)"\}\}$/);
    });
  }

  it('leaves text that holds only a short piece of a credential, or none', () => {
    assert.equal(redact('the key starts with sk-proj-Z3hQv9 and that is all'), 'the key starts with sk-proj-Z3hQv9 and that is all');
    assert.equal(redact('caf\\u00e9 50% off \\/ no secrets'), 'caf\\u00e9 50% off \\/ no secrets');
  });

  it('redacts bytes as text, and gives the same Buffer back when there is nothing to take out', () => {
    const clean = Buffer.from('data: {"delta":"nothing here"}\n\n');
    assert.equal(redactBytes(redact, clean), clean);
    assert.equal(redactBytes(redact, Buffer.from(`data: {"delta":"caf\u00e9 ${jsonEscaped(KEY)}"}\n\n`)).toString(), 'data: {"delta":"café [redacted]"}\n\n');
  });

  it('takes a string where bytes are expected (an in-process provider\'s body), short credentials included', () => {
    const short = createRedactor(['short-secret']);
    assert.equal(redactBytes(short, 'a short-secret b' as unknown as Buffer).toString(), 'a [redacted] b');
    assert.equal(redactBytes(redact, `x ${KEY} y` as unknown as Buffer).toString(), 'x [redacted] y');
  });

  it('learns secrets at run time: cloud secret keys, session tokens, OAuth tokens and private keys', () => {
    const cloud = createRedactor([]);
    const secrets = [
      'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      'IQoJb3JpZ2luX2VjEHEaCXVzLWVhc3QtMSJGMEQCIHgdf2G5S5dkkRAQvAa/x0FS+TEST',
      'ya29.a0AfB_byC5mXq7rTq3cIh2P2aU9vWq-test-token',
      '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----',
    ];
    for (const secret of secrets) assert.equal(cloud(`x ${secret} y`), `x ${secret} y`, 'not yet known');
    for (const secret of secrets) cloud.learn(secret);
    for (const secret of secrets.slice(0, 3)) assert.equal(cloud(`x ${secret} y`), 'x [redacted] y');
    // A private key is its long pieces: the lines of its base64 body, not its header.
    assert.equal(cloud(`x ${secrets[3]} y`), 'x -----BEGIN PRIVATE KEY-----\n[redacted]\n-----END PRIVATE KEY----- y');
    for (const secret of secrets) {
      const hidden = secret.split('\n').sort((a, b) => b.length - a.length)[0] as string;
      assert.match(cloud(JSON.stringify({ echoed: secret })), /^\{"echoed":"[^"]*\[redacted\][^"]*"\}$/);
      assert.ok(!cloud(JSON.stringify({ echoed: secret })).includes(hidden.slice(-MIN_RUN)));
    }
  });

  it('keeps the secrets it learns bounded, dropping the least recently told, never a configured one', () => {
    // Platforms tell it every renewed token (one an hour per provider): it must not grow for ever.
    const configured = 'configured-provider-key-0123456789';
    const redact = createRedactor([configured]);
    // Each token unlike the others (a shared run of 16 characters would itself be redacted).
    const token = (i: number): string => `ya29.${createHash('sha256').update(String(i)).digest('base64url')}`;
    redact.learn(token(0));
    for (let i = 1; i <= 500; i++) {
      redact.learn(token(i));
      // The one a platform keeps using is told again at every authorisation, so it stays.
      redact.learn(token(0));
    }
    assert.equal(redact(`x ${token(0)} y`), 'x [redacted] y', 'the token told again and again stays');
    assert.equal(redact(`x ${token(500)} y`), 'x [redacted] y', 'the latest token is known');
    assert.equal(redact(`x ${token(1)} y`), `x ${token(1)} y`, 'a token long renewed away is forgotten');
    assert.equal(redact(`x ${configured} y`), 'x [redacted] y', 'a configured credential is never forgotten');
  });
});

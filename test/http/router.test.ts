import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRouter, pathOf, queryOf } from '../../src/http/router.ts';
import type { RouteResult } from '../../src/http/router.ts';

/** The handler and parameters a request finds, or what it finds instead. */
function found(result: RouteResult<string>): { handler: string; params: Record<string, string> } | string {
  if (result.kind === 'found') return { handler: result.match.handler, params: result.match.params };
  return result.kind === 'method_not_allowed' ? `405 ${result.allow} (${result.pattern})` : '404';
}

describe('the router', () => {
  it('matches exact paths and whole-segment parameters, tolerating one trailing slash and ignoring the query', () => {
    const router = createRouter<string>();
    router.add('POST', '/v1/messages', 'messages');
    router.add('GET', '/v1/responses/:id', 'response');
    router.add('GET', '/v1/models/:id*', 'model');
    assert.deepEqual(found(router.match('POST', '/v1/messages/?beta=true')), { handler: 'messages', params: {} });
    assert.deepEqual(found(router.match('GET', '/v1/responses/resp_1')), { handler: 'response', params: { id: 'resp_1' } });
    assert.deepEqual(found(router.match('GET', '/v1/models/groq/openai/gpt-oss-120b')), { handler: 'model', params: { id: 'groq/openai/gpt-oss-120b' } });
    assert.equal(found(router.match('GET', '/v1/responses/a/b')), '404');
  });

  it('answers 405 with the methods allowed and the pattern of the path it knows', () => {
    const router = createRouter<string>();
    router.add('POST', '/v1/messages', 'messages');
    router.add('GET', '/v1/responses/:id', 'get');
    router.add('DELETE', '/v1/responses/:id', 'delete');
    assert.equal(found(router.match('GET', '/v1/messages')), '405 POST (/v1/messages)');
    assert.equal(found(router.match('PUT', '/v1/responses/x')), '405 DELETE, GET, HEAD (/v1/responses/:id)');
  });

  describe('the method form (Gemini: models/{model}:method)', () => {
    const router = createRouter<string>();
    router.add('POST', '/v1beta/models/:model*:method(generateContent|streamGenerateContent|countTokens)', 'generate');
    router.add('POST', '/v1beta/tunedModels/:model*:method(generateContent|streamGenerateContent)', 'tuned');
    router.add('GET', '/v1beta/models/:model*', 'get model');

    it('takes the model before the last colon and the method after it', () => {
      assert.deepEqual(found(router.match('POST', '/v1beta/models/gemini-2.5-pro:generateContent')), {
        handler: 'generate',
        params: { model: 'gemini-2.5-pro', method: 'generateContent' },
      });
      assert.deepEqual(found(router.match('POST', '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=k')), {
        handler: 'generate',
        params: { model: 'gemini-2.5-flash', method: 'streamGenerateContent' },
      });
    });

    it('keeps slashes and colons of the model id: the split is at the last colon', () => {
      assert.deepEqual(found(router.match('POST', '/v1beta/models/groq/openai/gpt-oss-120b:countTokens')), {
        handler: 'generate',
        params: { model: 'groq/openai/gpt-oss-120b', method: 'countTokens' },
      });
      assert.deepEqual(found(router.match('POST', '/v1beta/models/ollama/qwen3:8b:generateContent')), {
        handler: 'generate',
        params: { model: 'ollama/qwen3:8b', method: 'generateContent' },
      });
      // Percent-encoded as some clients send it.
      assert.deepEqual(found(router.match('POST', '/v1beta/models/qwen3%3A8b%3AgenerateContent')), {
        handler: 'generate',
        params: { model: 'qwen3:8b', method: 'generateContent' },
      });
    });

    it('matches only the methods it lists, and a route of the tuned-model form apart', () => {
      assert.deepEqual(found(router.match('POST', '/v1beta/tunedModels/my-model:streamGenerateContent')), {
        handler: 'tuned',
        params: { model: 'my-model', method: 'streamGenerateContent' },
      });
      assert.equal(found(router.match('POST', '/v1beta/tunedModels/my-model:countTokens')), '404');
      // An unlisted method is not this route: the path is then the shape of the GET model route.
      assert.equal(found(router.match('POST', '/v1beta/models/gemini-pro:embedContent')), '405 GET, HEAD (/v1beta/models/:model*)');
      assert.deepEqual(found(router.match('GET', '/v1beta/models/gemini-pro')), { handler: 'get model', params: { model: 'gemini-pro' } });
    });

    it('refuses an empty model or an empty method, and an unreadable escape', () => {
      const only = createRouter<string>();
      only.add('POST', '/v1beta/models/:model*:method(generateContent)', 'generate');
      assert.equal(found(only.match('POST', '/v1beta/models/:generateContent')), '404');
      assert.equal(found(only.match('POST', '/v1beta/models/gemini:')), '404');
      assert.equal(found(only.match('POST', '/v1beta/models/gemini')), '404');
      assert.equal(found(only.match('POST', '/v1beta/models/%E0%A4%A:generateContent')), '404');
    });
  });

  it('splits a request target into its path and its query', () => {
    assert.equal(pathOf('/v1beta/models/m:generateContent?key=secret'), '/v1beta/models/m:generateContent');
    assert.equal(queryOf('/v1beta/models/m:generateContent?key=secret&alt=sse'), 'key=secret&alt=sse');
    assert.equal(queryOf('/v1/messages'), '');
  });
});

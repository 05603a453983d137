import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { geminiErrorBody, geminiRetryDelaySeconds, geminiStatus } from '../../src/formats/gemini-errors.ts';

const FIXTURES = new URL('../fixtures/gemini/', import.meta.url);

describe('geminiErrorBody', () => {
  it("names the status as Google's HTTP mapping does", () => {
    const cases: Array<[number, string]> = [
      [400, 'INVALID_ARGUMENT'], [401, 'UNAUTHENTICATED'], [403, 'PERMISSION_DENIED'], [404, 'NOT_FOUND'], [413, 'INVALID_ARGUMENT'],
      [429, 'RESOURCE_EXHAUSTED'], [500, 'INTERNAL'], [502, 'UNAVAILABLE'], [503, 'UNAVAILABLE'], [504, 'DEADLINE_EXCEEDED'], [529, 'UNAVAILABLE'], [507, 'INTERNAL'],
    ];
    for (const [status, name] of cases) assert.equal(geminiStatus(status), name, String(status));
  });

  it('writes the body the SDK reads, with RetryInfo on a wait', () => {
    assert.deepEqual(geminiErrorBody(404, 'models/x is not found'), { error: { code: 404, message: 'models/x is not found', status: 'NOT_FOUND' } });
    assert.deepEqual(geminiErrorBody(429, 'Slow down', 6.2), {
      error: { code: 429, message: 'Slow down', status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' }] },
    });
  });

  it("reads the wait from Google's own 429 and from llmux's", () => {
    assert.equal(geminiRetryDelaySeconds(JSON.parse(readFileSync(new URL('error-429.json', FIXTURES), 'utf8'))), 34);
    assert.equal(geminiRetryDelaySeconds(geminiErrorBody(429, 'x', 3)), 3);
    assert.equal(geminiRetryDelaySeconds(JSON.parse(readFileSync(new URL('error-400.json', FIXTURES), 'utf8'))), undefined);
    assert.equal(geminiRetryDelaySeconds({ error: { details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: 'soon' }] } }), undefined);
    assert.equal(geminiRetryDelaySeconds('nope'), undefined);
  });
});

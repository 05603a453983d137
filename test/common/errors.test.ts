import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  GatewayError, UpstreamError, errorBody, errorObject, insufficientPermissions, invalidParameters, rateLimited, upstreamAuthFailed, upstreamFailed, upstreamTimeout,
} from '../../src/common/errors.ts';

/** What a client reads of an error: status, type, code, headers. */
function seen(error: GatewayError): unknown {
  return { status: error.status, type: error.type, code: error.code, headers: error.headers, retryable: error instanceof UpstreamError ? error.retryable : undefined };
}

describe('the error factories', () => {
  it('make each error raised in more than one place the same way everywhere', () => {
    assert.deepEqual(seen(rateLimited('slow down', { 'retry-after': '3' })), { status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded', headers: { 'retry-after': '3' }, retryable: undefined });
    assert.deepEqual(seen(insufficientPermissions('admins only')), { status: 403, type: 'permission_error', code: 'insufficient_permissions', headers: undefined, retryable: undefined });
    assert.deepEqual(seen(upstreamFailed('down')), { status: 502, type: 'api_error', code: 'upstream_error', headers: undefined, retryable: false });
    assert.deepEqual(seen(upstreamFailed('refused', { retryable: true })), { status: 502, type: 'api_error', code: 'upstream_error', headers: undefined, retryable: true });
    assert.deepEqual(seen(upstreamTimeout('slow', true)), { status: 504, type: 'api_error', code: 'upstream_timeout', headers: undefined, retryable: true });
    assert.deepEqual(seen(upstreamAuthFailed('check the key')), { status: 502, type: 'api_error', code: 'upstream_auth_failed', headers: undefined, retryable: false });
  });

  it('put extra fields (X-Debug-Auth) into the error object every body carries', () => {
    const error = insufficientPermissions('admins only', { debug: { admin: false } });
    assert.deepEqual(errorObject(error), { message: 'admins only', type: 'permission_error', code: 'insufficient_permissions', debug: { admin: false } });
    assert.equal(errorBody(error), '{"error":{"message":"admins only","type":"permission_error","param":null,"code":"insufficient_permissions","debug":{"admin":false}}}');
  });

  it("name the field at fault as OpenAI's error.param, null when there is none", () => {
    assert.equal(JSON.parse(errorBody(invalidParameters('messages.2.content: must be a string', 'messages.2.content')))['error']['param'], 'messages.2.content');
    assert.equal(JSON.parse(errorBody(invalidParameters('the request body is empty')))['error']['param'], null);
  });
});

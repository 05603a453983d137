/**
 * For tests of credential code: awaits a promise that must fail with a GatewayError and keeps the
 * message of every such refusal, so a last test can search them all for the secrets in play.
 */
import assert from 'node:assert/strict';
import { GatewayError } from '../../src/common/errors.ts';

export interface Refusals {
  /** The GatewayError `promise` rejects with (the test fails if it resolves or throws anything else). */
  refusal(promise: Promise<unknown>): Promise<GatewayError>;
  /** Every refusal's message so far. */
  messages: string[];
}

export function createRefusals(): Refusals {
  const messages: string[] = [];
  return {
    messages,
    async refusal(promise) {
      try {
        await promise;
      } catch (err) {
        assert.ok(err instanceof GatewayError, String(err));
        messages.push(err.message);
        return err;
      }
      assert.fail('expected a refusal');
    },
  };
}

/**
 * Carried state for translator tests (llmux.md section 11): a fixed sealer, turns bound to a key,
 * issuers of each family, and a reader for a target upstream.
 */
import { createSealer } from '../../src/responses/seal.ts';
import { carryTurnOf } from '../../src/dialects/carry.ts';
import { type CarriedItem, type CarryReader, type CarryTurn, type Issuer, createCarryReader } from '../../src/translate/carried.ts';

export const TEST_SEALER = createSealer(Buffer.alloc(32, 7));
export const KEY_A = 'key_a';
export const KEY_B = 'key_b';

export const ANTHROPIC: Issuer = { provider: 'anthropic-up', family: 'anthropic' };
export const GEMINI: Issuer = { provider: 'gemini-up', family: 'gemini' };
export const DEEPSEEK: Issuer = { provider: 'deepseek-up', family: 'provider:deepseek-up' };
export const OPENROUTER: Issuer = { provider: 'openrouter-up', family: 'openrouter' };

/** The carry turn of `keyId` under the test sealer. */
export function carryTurn(keyId = KEY_A): CarryTurn {
  return carryTurnOf(TEST_SEALER, keyId);
}

/** `item` sealed as `issuer` issued it to `keyId`. */
export function sealed(item: CarriedItem, issuer: Issuer = ANTHROPIC, keyId = KEY_A): string {
  return carryTurn(keyId).seal(issuer, item);
}

/** A reader for a body to `target`, of `keyId`'s turn; its warnings go to `warnings`. */
export function reader(target: Issuer | undefined, warnings: string[] = [], keyId = KEY_A): CarryReader {
  return createCarryReader(carryTurn(keyId), target, (message) => warnings.push(message));
}

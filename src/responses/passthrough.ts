/**
 * Pass-through answers and key isolation (responses.md "Pass-through and key isolation"). A
 * provider that serves the Responses API itself keeps its own store under llmux's one credential,
 * shared by every llmux key; so nothing the provider holds may be reached by an id llmux did not
 * relay to the asking key (issue 25: an unknown `previous_response_id` was forwarded, and the
 * provider resolved another key's conversation).
 *
 * - A pass-through answer is stored whole, like any other (its chain is then resolved by llmux).
 *   One that cannot be (larger than the store) is recorded instead: a small record in the same
 *   store, for the same key and time to live, naming the provider, with `item_reference`s to its
 *   output items ({@link recordOfProviderHeld}).
 * - `previous_response_id` or `item_reference` llmux neither stores nor recorded for the key:
 *   404 `not_found_error` (./resolve.ts); never forwarded. A recorded one is left for the provider
 *   to resolve, on a pass-through request (elsewhere llmux has nothing to build the history from: 404).
 * - `GET` / `DELETE` / `input_items` of a recorded id are forwarded to its provider; of anything
 *   else, llmux's own store answers (404 when it holds nothing).
 */
import type { ResponsesInputItem, ResponsesResponse } from '../formats/responses.ts';
import { GatewayError, truncate } from '../common/errors.ts';
import type { StoredResponse } from './store.ts';

/** The record of a pass-through answer the provider holds: its id, its output items' ids, its provider. */
export function recordOfProviderHeld(answer: ResponsesResponse, keyId: string, provider: string): StoredResponse {
  const references: ResponsesInputItem[] = [];
  for (const item of answer.output) if (typeof item.id === 'string' && item.id !== '') references.push({ type: 'item_reference', id: item.id });
  return { id: answer.id, keyId, created: answer.created_at, input: references, response: { ...answer, output: [] }, provider };
}

/** 404 `not_found_error`: what the request builds on is held by a provider it does not go to. */
export function heldElsewhere(what: string, id: string, param: string): GatewayError {
  return new GatewayError(
    404,
    'not_found_error',
    'response_held_by_provider',
    `${what} "${truncate(id, 200)}" is held by the provider that answered it, and llmux keeps only its id: continue it with a model of that provider`,
    { param },
  );
}

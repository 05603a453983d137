/**
 * The full input of a Responses request (responses.md "State"): the stored previous response's
 * input and output items before this request's `input`, and every `item_reference` replaced by the
 * stored item it names. The previous response's `instructions` are not carried over, as in
 * OpenAI's API: the request's own `instructions` (or none) apply.
 */
import type { ResponsesInputItem, ResponsesRequest } from '../formats/responses.ts';
import { GatewayError, invalidParameters, truncate } from '../common/errors.ts';
import type { ResponseStore } from './store.ts';
import { heldElsewhere } from './passthrough.ts';
import { isRecord } from '../common/json.ts';

export interface ResolveOptions {
  /**
   * The request goes as it is to a provider that serves the Responses API itself: what llmux
   * recorded of that provider's answers for this key (./passthrough.ts) is left for it to resolve.
   * Nothing else is: what llmux neither stores nor recorded for the key is then 404, never forwarded.
   */
  passThrough?: boolean;
}

/**
 * Resolves `request`'s input against the responses `keyId` stored. A string input becomes one user
 * message with an `input_text` part (how OpenAI lists it among a response's input items).
 *
 * A `previous_response_id` the provider holds adds nothing (it stays in the request, for the
 * provider); an `item_reference` to an item the provider holds stays as it is.
 *
 * @throws GatewayError 404 `not_found_error` when `previous_response_id` names no stored response of
 *   this key (unknown, expired, deleted, another key's, or created with `store: false`), or one the
 *   provider holds when the request does not pass through; when an `item_reference` names no item
 *   of the key's stored responses: 404 on a pass-through request, 400 otherwise.
 */
export async function resolveInput(request: ResponsesRequest, keyId: string, store: ResponseStore, options: ResolveOptions = {}): Promise<ResponsesInputItem[]> {
  const resolved: ResponsesInputItem[] = [];
  const previousId = request.previous_response_id;
  if (typeof previousId === 'string') {
    const previous = await store.get(keyId, previousId);
    if (previous === undefined) {
      throw new GatewayError(
        404,
        'not_found_error',
        'previous_response_not_found',
        `previous_response_id: response "${truncate(previousId, 200)}" was not found; it may have expired, been deleted, been created with store: false, or belong to another key`,
        { param: 'previous_response_id' },
      );
    }
    if (previous.provider === undefined) resolved.push(...previous.input, ...(previous.response.output as ResponsesInputItem[]));
    else if (options.passThrough !== true) throw heldElsewhere('previous_response_id: response', previousId, 'previous_response_id');
  }

  const input = request.input;
  if (typeof input === 'string') {
    resolved.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] });
    return resolved;
  }
  if (!Array.isArray(input)) return resolved;
  for (let i = 0; i < input.length; i++) {
    const item = input[i];
    const id = referenceId(item);
    if (id === undefined) {
      if (item !== undefined) resolved.push(item);
      continue;
    }
    const found = await store.findItem(keyId, id);
    const message = `input.${i}: item_reference "${truncate(id, 200)}" matches no item of a stored response of this key; it may have expired or been deleted`;
    if (found === undefined && options.passThrough === true) throw new GatewayError(404, 'not_found_error', 'item_not_found', message, { param: `input.${i}` });
    if (found === undefined) throw invalidParameters(message, `input.${i}`);
    // An item a provider holds is recorded as a reference to it: for that provider to resolve.
    if (referenceId(found) !== undefined && options.passThrough !== true) throw heldElsewhere(`input.${i}: item`, id, `input.${i}`);
    resolved.push(found as ResponsesInputItem);
  }
  return resolved;
}

/** The id an `item_reference` names (typed, or an item with neither type nor role); undefined for other items. */
function referenceId(item: unknown): string | undefined {
  if (!isRecord(item)) return undefined;
  const type = item['type'];
  const isReference = type === 'item_reference' || ((type === undefined || type === null) && item['role'] === undefined);
  return isReference && typeof item['id'] === 'string' ? item['id'] : undefined;
}

/**
 * The full input of a Responses request (responses.md "State"): the stored previous response's
 * input and output items before this request's `input`, and every `item_reference` replaced by the
 * stored item it names. The previous response's `instructions` are not carried over, as in
 * OpenAI's API: the request's own `instructions` (or none) apply.
 */
import type { ResponsesInputItem, ResponsesRequest } from '../formats/responses.ts';
import { GatewayError, invalidParameters, truncate } from '../common/errors.ts';
import type { ResponseStore } from './store.ts';
import { isRecord } from '../common/json.ts';

export interface ResolveOptions {
  /**
   * Leave an `item_reference` this store does not know as it is, for a provider that serves the
   * Responses API itself and may know it (pass-through), instead of refusing it.
   */
  keepUnknownReferences?: boolean;
}

/**
 * Resolves `request`'s input against the responses `keyId` stored. A string input becomes one user
 * message with an `input_text` part (how OpenAI lists it among a response's input items).
 *
 * @throws GatewayError 404 `not_found_error` when `previous_response_id` names no stored response of
 *   this key (unknown, expired, deleted, another key's, or created with `store: false`); 400 when an
 *   `item_reference` names no item of the key's stored responses (unless `keepUnknownReferences`).
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
        { extra: { param: 'previous_response_id' } },
      );
    }
    resolved.push(...previous.input, ...(previous.response.output as ResponsesInputItem[]));
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
    if (found === undefined && options.keepUnknownReferences === true) {
      resolved.push(item as ResponsesInputItem);
      continue;
    }
    if (found === undefined) {
      throw invalidParameters(`input.${i}: item_reference "${truncate(id, 200)}" matches no item of a stored response of this key; it may have expired or been deleted`);
    }
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

/**
 * The Responses dialect (OpenAI's `POST /responses`, responses.md). The one stateful format: a
 * request may build on stored responses (`previous_response_id`, `item_reference`), its answer is
 * stored for the key that asked (unless `store: false`), and Anthropic thinking travels to clients
 * sealed (src/responses/seal.ts).
 *
 * Decisions beyond responses.md:
 * - What a request builds on must be llmux's to give the key that asks (responses.md "Pass-through
 *   and key isolation", src/responses/passthrough.ts): an id llmux neither stores nor recorded for
 *   the key is 404, never forwarded. A recorded pass-through answer (one too large to store whole)
 *   is left for its provider to resolve, and that chain's answers are recorded, not stored.
 * - Resolved history is sent upstream as input items and `previous_response_id` is taken out of
 *   the upstream body (the provider never saw that id); the answer still names it.
 * - Stored responses keep every reasoning item's state sealed (for the key, naming the provider
 *   that issued it: src/dialects/carry.ts), whether or not the client asked for
 *   `reasoning.encrypted_content`, so a tool loop built on `previous_response_id` replays what the
 *   upstream wants back (llmux.md section 11). The client's copy carries the seals only when asked.
 * - Input items are stored with an id; one the client gave none gets one by its kind (`msg_…`,
 *   `fc_…`, `fco_…`, …), so `/input_items` lists every item with an id.
 * - Reasoning sealed by llmux is not sent to a Responses upstream (it could not open it).
 */
import type { ResponsesInputItem, ResponsesOutputItem, ResponsesRequest, ResponsesResponse } from '../formats/responses.ts';
import { isLlmuxSeal, validateResponsesRequest, wantsEncryptedReasoning } from '../formats/responses.ts';
import type { ClientRequestOf } from '../formats/wire.ts';
import { COMMENT_PING_FRAME } from '../formats/frames.ts';
import type { StreamErrorInfo } from '../formats/frames.ts';
import { fromResponsesUsage } from '../formats/usage.ts';
import type { ResponsesTurn } from '../translate/index.ts';
import { createResponsesEmitter } from '../translate/responses-events.ts';
import { failureCode, newResponseId, responseEcho, toResponsesUsage } from '../translate/responses-output.ts';
import { NO_TOOL_NAMES } from '../translate/responses-tools.ts';
import { resolveInput } from '../responses/resolve.ts';
import { recordOfProviderHeld } from '../responses/passthrough.ts';
import { LAZY_REQUEST_MEMBERS } from '../formats/text-members.ts';
import { estimateTokens } from '../formats/estimate.ts';
import { responsesTraits } from '../formats/traits.ts';
import { responsesConversationKey } from '../formats/conversation-key.ts';
import { asRecord, isRecord } from '../common/json.ts';
import { realValue } from '../common/json-lazy.ts';
import { newId } from '../common/ids.ts';
import { STANDARD_CREDENTIALS } from '../common/credentials.ts';
import { errorBody } from '../common/errors.ts';
import { NO_HEADERS, passedOn } from './dialect.ts';
import { carryTurnOf, promptCacheKey, promptCacheKeyFor } from './carry.ts';
import type { Dialect, TextAnswer, Turn, TurnScope } from './dialect.ts';
import { lastUserText } from './user-text.ts';

/** Event names of the Responses streams llmux writes and relays, interned by the SSE parser. */
const EVENT_NAMES: readonly string[] = [
  'response.created', 'response.in_progress', 'response.output_item.added', 'response.output_item.done',
  'response.content_part.added', 'response.content_part.done', 'response.output_text.delta', 'response.output_text.done',
  'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.reasoning_summary_text.delta',
  'response.completed', 'response.incomplete', 'response.failed', 'error',
];

/** Id prefixes for stored input items the client gave no id, by item type. */
const ID_PREFIX: Readonly<Record<string, string>> = {
  message: 'msg_',
  function_call: 'fc_',
  function_call_output: 'fco_',
  custom_tool_call: 'ctc_',
  custom_tool_call_output: 'ctco_',
  reasoning: 'rs_',
  local_shell_call: 'lsh_',
};

export const responsesDialect: Dialect<'responses'> = {
  format: 'responses',
  routes: ['/v1/responses', '/responses'],
  credentials: STANDARD_CREDENTIALS,
  eventNames: EVENT_NAMES,

  readHeaders: () => ({}),
  readRequest(raw) {
    const body = validateResponsesRequest(raw);
    return { format: 'responses', body, model: body.model, stream: body.stream === true };
  },
  lazyMembers: LAZY_REQUEST_MEMBERS,
  maxTokens: (body) => body.max_output_tokens,
  estimate: (body, texts) => estimateTokens([body.instructions, body.input, body.tools], texts),
  // The terminal event always carries the usage.
  wantsStreamUsage: () => true,
  beginTurn,
  traits: responsesTraits,
  conversationKey: responsesConversationKey,
  // A later turn names this answer by its id (`previous_response_id`): sticky routing binds it.
  answerId: (answer) => (isRecord(answer) && typeof answer['id'] === 'string' && answer['id'] !== '' ? answer['id'] : undefined),

  formatHeaders: () => NO_HEADERS,
  passThroughBody(body, upstreamId, raw, envelope, carry) {
    const copy: ResponsesRequest = { ...body, model: upstreamId };
    const edits = new Map<string, string | undefined>([['model', JSON.stringify(upstreamId)]]);
    const cacheKey = carry === undefined ? undefined : promptCacheKeyFor(body.prompt_cache_key, carry);
    if (cacheKey !== undefined) {
      copy.prompt_cache_key = cacheKey;
      edits.set('prompt_cache_key', JSON.stringify(cacheKey));
    }
    if (Array.isArray(body.input) && body.input.some(isSealedByUs)) {
      copy.input = body.input.filter((item) => !isSealedByUs(item));
      // The input changed: the client's bytes no longer say it (only its texts are still theirs).
      return passedOn(copy, copy, raw, edits, envelope);
    }
    return passedOn(body, copy, raw, edits, envelope);
  },
  passThroughAnswer(bytes, modelId) {
    let answer: unknown;
    try {
      answer = JSON.parse(bytes.toString('utf8'));
    } catch {
      return { bytes, answer: undefined };
    }
    if (!isRecord(answer)) return { bytes, answer: undefined };
    answer['model'] = modelId;
    return { bytes: Buffer.from(JSON.stringify(answer)), answer };
  },
  usageKey: 'usage',
  readUsage: (usage) => fromResponsesUsage(asRecord(usage)),

  pingFrame: COMMENT_PING_FRAME,
  errorFrame: responsesErrorFrame,
  errorBody,

  // A Responses `input` may be one string: the user's text.
  userText: (body, limit) => lastUserText(typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input, limit),

  textAnswer(answer) {
    const emitter = createResponsesEmitter({ model: answer.model, echo: responseEcho({ model: answer.model }), toolNames: NO_TOOL_NAMES });
    emitter.start();
    emitter.text(answer.text);
    finish(emitter, answer);
    return JSON.stringify(emitter.response());
  },
  textStream: responsesTextStream,
};

/**
 * What the request builds on, resolved; the answer's seals; and, when the answer is stored, the
 * thinking of its reasoning items, kept to seal into the stored copy.
 */
async function beginTurn(request: ClientRequestOf<'responses'>, scope: TurnScope): Promise<Turn<'responses'>> {
  const { keyId, passThrough } = scope;
  const { store } = scope.services.responses;
  const sealer = await scope.services.responses.sealer();
  const previousId = request.body.previous_response_id;
  const resolves = previousId !== undefined || (Array.isArray(request.body.input) && request.body.input.some(isReference));
  // What it builds on joins stored text to the client's: a body read lazily is decoded first, so
  // no stored text that looks like a reference is taken for one (src/common/json-lazy.ts).
  const texts = resolves ? undefined : request.raw?.texts;
  const body = resolves ? realValue(request.body, request.raw?.texts) : request.body;
  const previous = previousId === undefined ? undefined : await store.get(keyId, previousId);
  const providerHolds = passThrough && previous?.provider !== undefined;
  const storing = body.store !== false && !providerHolds;

  const turn: ResponsesTurn = Object.assign(carryTurnOf(sealer, keyId), { responseId: newResponseId(), now: scope.now, exposeSeals: wantsEncryptedReasoning(body) });
  const sealed = new Map<string, string>();
  if (storing) turn.keepSealed = (itemId, seal) => sealed.set(itemId, seal);

  // Throws 404 for what llmux neither stores nor recorded for this key: never left for a provider.
  const input = await resolveInput(body, keyId, store, { passThrough });
  let answered = request;
  if (resolves) {
    const resolved: ResponsesRequest = { ...body, input };
    if (!providerHolds) {
      delete resolved.previous_response_id;
      if (previousId !== undefined) turn.previousResponseId = previousId;
    }
    answered = { ...request, body: resolved, raw: undefined };
  }
  // The conversation read from the whole history (its first user message), the same every turn of a chain.
  if (typeof body.prompt_cache_key !== 'string' || body.prompt_cache_key === '') turn.cacheKey = promptCacheKey(keyId, responsesConversationKey(answered.body, answered.raw?.texts));

  return {
    request: answered,
    translation: turn,
    async keep(answer) {
      if (body.store === false || !isFinalResponse(answer)) return;
      // Stored as the client sent it: the texts of a body read lazily are decoded now.
      if (storing && await store.put({ id: answer.id, keyId, created: answer.created_at, input: withIds(realValue(input, texts)), response: withSealedReasoning(answer, sealed) })) return;
      // A pass-through answer not kept whole: its ids are kept, for its provider to resolve for this key only.
      if (passThrough && scope.providerId !== undefined) await store.put(recordOfProviderHeld(answer, keyId, scope.providerId));
    },
  };
}

function isReference(item: unknown): boolean {
  if (!isRecord(item)) return false;
  const type = item['type'];
  return type === 'item_reference' || ((type === undefined || type === null) && item['role'] === undefined && typeof item['id'] === 'string');
}

function isSealedByUs(item: unknown): boolean {
  return isRecord(item) && item['type'] === 'reasoning' && typeof item['encrypted_content'] === 'string' && isLlmuxSeal(item['encrypted_content']);
}

/** A response object that is done (an answer cut off by the client leaving is not kept). */
function isFinalResponse(answer: unknown): answer is ResponsesResponse {
  return isRecord(answer) && typeof answer['id'] === 'string' && answer['id'] !== ''
    && (answer['status'] === 'completed' || answer['status'] === 'incomplete' || answer['status'] === 'failed')
    && Array.isArray(answer['output']);
}

/** The input items as stored: each with an id. */
function withIds(input: ResponsesInputItem[]): ResponsesInputItem[] {
  return input.map((item) => {
    if (!isRecord(item) || (typeof item['id'] === 'string' && item['id'] !== '')) return item;
    const type = typeof item['type'] === 'string' ? item['type'] : 'message';
    return { ...item, id: newId(ID_PREFIX[type] ?? 'item_') } as ResponsesInputItem;
  });
}

/** The response as stored: every reasoning item whose seal was kept carries it. */
function withSealedReasoning(answer: ResponsesResponse, sealed: ReadonlyMap<string, string>): ResponsesResponse {
  if (sealed.size === 0) return answer;
  const output = answer.output.map((item): ResponsesOutputItem => {
    if (item.type !== 'reasoning' || item.encrypted_content !== undefined) return item;
    const seal = sealed.get(item.id);
    return seal === undefined ? item : { ...item, encrypted_content: seal };
  });
  return { ...answer, output };
}

/**
 * An error after a Responses stream has started (a pass-through stream cut off): `response.failed`
 * with the response the stream started (the SDKs refuse a terminal event naming another), or one
 * of its own when none came. Its output is what the stream started with (nothing: what came after
 * was only relayed); the client has the items it saw. Its `sequence_number` continues the stream's.
 */
export function responsesErrorFrame(error: StreamErrorInfo): string {
  const started = asRecord(error.answer);
  const response = {
    ...(started ?? { id: newResponseId(), object: 'response', created_at: Math.floor(Date.now() / 1000) }),
    status: 'failed',
    error: { code: failureCode(typeof error.type === 'string' ? error.type : undefined), message: error.message },
    incomplete_details: null,
    output: [],
    usage: started?.['usage'] ?? null,
  };
  return `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', response, sequence_number: error.sequenceNumber ?? 0 })}\n\n`;
}

function finish(emitter: ReturnType<typeof createResponsesEmitter>, answer: TextAnswer): void {
  emitter.settle(answer.cut ? { status: 'incomplete', reason: 'max_output_tokens' } : { status: 'completed' });
  emitter.complete(toResponsesUsage(answer.usage, 0));
}

function* responsesTextStream(answer: TextAnswer & { words: Iterable<string> }): Generator<string> {
  const frames: string[] = [];
  const emitter = createResponsesEmitter({
    model: answer.model,
    echo: responseEcho({ model: answer.model }),
    toolNames: NO_TOOL_NAMES,
    write: (frame) => frames.push(frame),
  });
  const flush = (): string => frames.splice(0).join('');
  emitter.start();
  yield flush();
  for (const word of answer.words) {
    emitter.text(word);
    yield flush();
  }
  finish(emitter, answer);
  yield flush();
}

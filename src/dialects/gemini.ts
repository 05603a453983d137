/**
 * The Gemini dialect (Google's generateContent, llmux.md section 9): the format whose request is
 * not all in its body. `POST /v1beta/models/{model}:generateContent` answers whole,
 * `:streamGenerateContent` streams (`?alt=sse`: `data:` events; without it, one JSON array written
 * element by element); the same under `/v1/` and at the root.
 *
 * Decisions where the spec is silent (Google's API reference and the `@google/genai` SDK decide):
 * - `{model}` is a llmux model id, which may hold `/` and `:` (the route splits the method off at
 *   the last `:`); a leading `models/` is taken off (a client that writes the resource name twice),
 *   and `tunedModels/{id}` (the SDK's form for tuned models) names the llmux model `{id}`.
 * - The key comes as `x-goog-api-key` (the SDKs, Gemini CLI), `?key=` (curl, Google's REST
 *   examples; never in the log: the log writes the path alone) or `Authorization: Bearer`.
 * - A Gemini upstream gets the client's bytes as they came (the model goes in the upstream's path),
 *   so Google's thought signatures pass through untouched; the answer names the llmux model in
 *   `modelVersion`, the only place Gemini names it. Only a history holding llmux seals (what
 *   translated answers carried: llmux.md section 11) is changed: each seal goes back as the Gemini
 *   signature it holds, or is taken out, with Google's placeholder where Gemini 3 checks for one
 *   (src/translate/carry-gemini.ts).
 * - Errors are Google's `{"error": {code, message, status}}` (formats/gemini-errors.ts), a 429 with
 *   its RetryInfo from our `retry-after`; a refused key is told where Gemini clients send it.
 * - Streams always carry usage (every Gemini event may): there is nothing to ask for. A ping is an
 *   SSE comment, which the SDKs skip.
 */
import type { GeminiContent, GeminiRequest, GeminiResponse } from '../formats/gemini-types.ts';
import { validateGeminiRequest } from '../formats/gemini.ts';
import { estimateGeminiRequestTokens } from '../formats/gemini-estimate.ts';
import { geminiTraits } from '../formats/traits.ts';
import { geminiConversationKey } from '../formats/conversation-key.ts';
import { geminiErrorBody } from '../formats/gemini-errors.ts';
import { COMMENT_PING_FRAME, geminiErrorFrame } from '../formats/frames.ts';
import { fromGeminiUsage } from '../formats/usage.ts';
import { createGeminiEncoder } from '../translate/gemini-encoder.ts';
import type { AnswerEncoder } from '../translate/answer-events.ts';
import { MODEL_VERSION_KEY, withModel } from '../passthrough/model-field.ts';
import { asRecord } from '../common/json.ts';
import { invalidParameters } from '../common/errors.ts';
import type { CredentialSource } from '../common/credentials.ts';
import { NO_HEADERS, keepNothing, mayHoldSeals, noAnswerId, passedOn } from './dialect.ts';
import { carryTurnOf } from './carry.ts';
import { withSealer } from '../responses/state.ts';
import type { Dialect, PassThroughCarry, TextAnswer, Turn } from './dialect.ts';
import { createCarryReader } from '../translate/carried.ts';
import { carryGeminiContents } from '../translate/carry-gemini.ts';
import { NO_USER_TEXT } from './user-text.ts';

/** Where Gemini's clients send their key, in the order it is looked for. */
export const GEMINI_CREDENTIALS: readonly CredentialSource[] = [
  { header: 'x-goog-api-key' },
  { query: 'key' },
  { header: 'authorization', scheme: 'bearer' },
];

/** The model operations, as the router's method form: the model id is the rest of the path up to its last `:`. */
const OPERATIONS = ':model*:method(generateContent|streamGenerateContent)';

/** Under the API versions Google's SDKs call (`v1beta` by default, `v1`) and at the root; `models/` and `tunedModels/`. */
export const GEMINI_PREFIXES: readonly string[] = ['/v1beta', '/v1', ''];

const INVALID_KEY_MESSAGE = 'API key not valid: send a valid llmux key as "x-goog-api-key: <key>" (or "?key=<key>", or "Authorization: Bearer <key>")';

const STREAM_METHOD = 'streamGenerateContent';

/**
 * The llmux model id a Gemini path names: its `{model}` without a leading `models/`; from a
 * `tunedModels/` route, the id after it.
 */
export function geminiModelId(model: string): string {
  return model.startsWith('models/') ? model.slice('models/'.length) : model;
}

/** Whether a request target's query asks for server-sent events (`alt=sse`). */
function wantsSse(query: string): boolean {
  return query !== '' && new URLSearchParams(query).get('alt') === 'sse';
}

/** The text of the last `user` content (a content without a role is the user's), at most `limit` characters. */
function lastUserText(contents: readonly GeminiContent[], limit: number): string {
  for (let i = contents.length - 1; i >= 0; i--) {
    const content = contents[i] as GeminiContent;
    if (content.role !== undefined && content.role !== 'user') continue;
    const pieces: string[] = [];
    let length = 0;
    for (const part of content.parts) {
      if (length >= limit) break;
      if (typeof part.text !== 'string' || part.text === '' || part.thought === true) continue;
      const piece = part.text.slice(0, limit - length);
      pieces.push(piece);
      length += piece.length + 1;
    }
    const text = pieces.join('\n').slice(0, limit);
    if (text !== '') return text;
  }
  return NO_USER_TEXT;
}

/** The echo model's answer told to a Gemini encoder: its words, then its stop and usage. */
function echoEncoder(answer: TextAnswer, write?: (text: string) => void): AnswerEncoder<GeminiResponse> {
  const encoder = createGeminiEncoder({ model: answer.model, ...(write === undefined ? {} : { write }) });
  encoder.start(answer.model);
  return encoder;
}

function endEcho(encoder: AnswerEncoder<GeminiResponse>, answer: TextAnswer): void {
  encoder.usage({ ...answer.usage, reasoningTokens: 0 });
  encoder.stop({ reason: answer.cut ? 'max_tokens' : 'end_turn' });
  encoder.end();
}

function* geminiTextStream(answer: TextAnswer & { words: Iterable<string> }): Generator<string> {
  let pending = '';
  const encoder = echoEncoder(answer, (text) => {
    pending += text;
  });
  for (const word of answer.words) {
    encoder.text(word);
    yield pending;
    pending = '';
  }
  endEcho(encoder, answer);
  yield pending;
}

/** The contents with their llmux seals sorted for the upstream; undefined when they hold none. */
function carriedContents(body: GeminiRequest, carry: PassThroughCarry<'gemini'>): GeminiContent[] | undefined {
  const reader = createCarryReader(carry.turn, carry.model.issuer, carry.onWarning);
  const contents = carryGeminiContents(Array.isArray(body.contents) ? body.contents : [], reader);
  reader.finish();
  return contents;
}

export const geminiDialect: Dialect<'gemini'> = {
  format: 'gemini',
  routes: GEMINI_PREFIXES.flatMap((prefix) => [`${prefix}/models/${OPERATIONS}`, `${prefix}/tunedModels/${OPERATIONS}`]),
  credentials: GEMINI_CREDENTIALS,
  eventNames: [],

  readHeaders: () => ({}),
  readRequest(raw, { params, query }) {
    const body = validateGeminiRequest(raw);
    const model = geminiModelId(params['model'] ?? '');
    if (model === '') throw invalidParameters('model: the path names no model; call /v1beta/models/{model}:generateContent');
    const stream = params['method'] === STREAM_METHOD;
    return { format: 'gemini', body, model, stream, framing: stream && !wantsSse(query) ? 'json-array' : undefined };
  },
  maxTokens: (body) => body.generationConfig?.maxOutputTokens,
  estimate: (body) => estimateGeminiRequestTokens(body),
  traits: geminiTraits,
  conversationKey: geminiConversationKey,
  answerId: noAnswerId,
  // Every Gemini event may carry usage, and its clients read it: nothing to ask for.
  wantsStreamUsage: () => true,
  beginTurn: (request, scope) => withSealer(scope.services.responses, (sealer): Turn<'gemini'> => ({
    request,
    translation: Object.assign(carryTurnOf(sealer, scope.keyId, geminiConversationKey(request.body)), { stream: request.stream }),
    keep: keepNothing,
  })),

  // The provider's key is the platform's; Gemini has no version header.
  formatHeaders: () => NO_HEADERS,
  // The body names no model and no stream (the upstream's path does): the client's bytes as they are, its seals sorted.
  passThroughBody(body: GeminiRequest, _upstreamId, raw, envelope, carry) {
    const contents = carry === undefined || !mayHoldSeals(body, raw) ? undefined : carriedContents(body, carry);
    if (contents === undefined) return passedOn(body, body, raw, new Map(), envelope);
    return passedOn(body, { ...body, contents }, raw, new Map([['contents', JSON.stringify(contents)]]), envelope);
  },
  passThroughAnswer: (bytes, modelId) => ({ bytes: withModel(bytes, Buffer.from(JSON.stringify(modelId)), MODEL_VERSION_KEY), answer: undefined }),
  usageKey: 'usageMetadata',
  readUsage: (usage) => fromGeminiUsage(asRecord(usage)),

  pingFrame: COMMENT_PING_FRAME,
  errorFrame: geminiErrorFrame,
  errorBody(error) {
    const retryAfter = Number(error.headers?.['retry-after']);
    const message = error.code === 'invalid_api_key' ? INVALID_KEY_MESSAGE : error.message;
    return JSON.stringify(geminiErrorBody(error.status, message, error.status === 429 && Number.isFinite(retryAfter) ? retryAfter : undefined));
  },

  userText: (body, limit) => lastUserText(body.contents, limit),
  textAnswer(answer) {
    const encoder = echoEncoder(answer);
    encoder.text(answer.text);
    endEcho(encoder, answer);
    return JSON.stringify(encoder.answer());
  },
  textStream: geminiTextStream,
};

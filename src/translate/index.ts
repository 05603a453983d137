/**
 * Which translators stand between a client's format and an upstream's: the translators' own
 * direction choice, made once per request. Same format has no translation (the answer passes
 * through as bytes).
 *
 * A translation is per request: `request()` translates the body and returns what turns this
 * request's answer back (a Responses request's tool names, its seals and its response id travel
 * from the request to the answer that way), so nothing of one request is kept in the table.
 *
 * Requests are translated pairwise (a request translation is where fidelity is decided). Answers,
 * streamed and whole, are composed here from the upstream format's decoder (`DECODERS`) and the
 * client format's encoder through the neutral answer events (./answer-events.ts): a whole answer
 * is the same events as the stream, written nowhere.
 *
 * Longer than most files: every (client, upstream) pair is composed here, each with what it carries
 * from the request to the answer (seals, the chat store's recorder: llmux.md section 11), and one
 * table of pairs reads better than a file per pair.
 */
import type { AnswerOf, ChatResponse, MessagesResponse, ProviderFormat, RequestOf, TokenUsage, UpstreamFormat, WireFormat } from '../formats/wire.ts';
import type { ResponsesResponse } from '../formats/responses.ts';
import type { SseEvent } from '../sse/parser.ts';
import type { AnswerEncoder, AnswerEvents, DecoderOptions, StreamDecoder } from './answer-events.ts';
import { createChatStreamDecoder, decodeChatAnswer } from './chat-decoder.ts';
import { createMessagesStreamDecoder, decodeMessagesAnswer } from './messages-decoder.ts';
import { converseAnswerUsage, createConverseStreamDecoder, decodeConverseAnswer } from './converse-decoder.ts';
import { chatUsageObject, fromChatUsage, fromGeminiUsage, fromMessagesUsage } from '../formats/usage.ts';
import { MESSAGES_EVENT_NAMES } from '../formats/frames.ts';
import { CONVERSE_EVENT_NAMES } from '../formats/converse.ts';
import { asRecord } from '../common/json.ts';
import { createChatEncoder, type ChatEncoderOptions } from './chat-encoder.ts';
import { createMessagesEncoder, type MessagesEncoderOptions } from './messages-encoder.ts';
import { createResponsesEncoder } from './responses-encoder.ts';
import { createGeminiStreamDecoder, decodeGeminiAnswer } from './gemini-decoder.ts';
import { createGeminiEncoder, type GeminiEncoderOptions } from './gemini-encoder.ts';
import type { GeminiRequest } from '../formats/gemini-types.ts';
import { geminiRequestToChat } from './gemini-to-chat.ts';
import { geminiRequestToMessages } from './gemini-to-messages.ts';
import { geminiToolNames } from './gemini-history.ts';
import { chatRequestToGemini } from './chat-to-gemini.ts';
import { messagesRequestToGemini } from './messages-to-gemini.ts';
import { responsesRequestToGemini } from './responses-to-gemini.ts';
import type { UpstreamModel } from './messages-to-chat.ts';
import { messagesRequestToChat } from './messages-to-chat.ts';
import { chatRequestToMessages } from './chat-to-messages.ts';
import { responsesRequestToChat } from './responses-to-chat.ts';
import { responsesRequestToMessages } from './responses-to-messages.ts';
import { chatRequestToConverse } from './chat-to-converse.ts';
import { messagesRequestToConverse } from './messages-to-converse.ts';
import { responsesRequestToConverse } from './responses-to-converse.ts';
import type { ResponsesAnswerOptions } from './responses-output.ts';
import { responseEcho, tokenCount } from './responses-output.ts';
import type { ToolNames } from './responses-tools.ts';
import { type CarriedItem, type CarryReader, type CarryTurn, type ChatTurn, OPENAI_FAMILY, createCarryReader } from './carried.ts';
import { createCarryRecorder } from './carry-recorder.ts';

export type { UpstreamModel } from './messages-to-chat.ts';
export type { CarryTurn, ChatTurn } from './carried.ts';

/**
 * What one Responses request's translations need besides its body, made when the request arrives
 * (src/dialects/responses.ts): the response's id (known before the upstream answers, so the answer
 * can be stored under it), and the seals both ways (./carried.ts).
 */
export interface ResponsesTurn extends CarryTurn {
  responseId: string;
  /** Milliseconds since the epoch, for `created_at`. */
  now(): number;
  /** The client's copy of the answer carries its seals: it asked for `reasoning.encrypted_content`. */
  exposeSeals: boolean;
  /** Told of each reasoning item's seal as it closes, carried by the client's copy or not: the stored copy keeps it. */
  keepSealed?: (itemId: string, sealed: string) => void;
  /** The stored response the input was resolved from: the body sent on no longer names it, the answer does. */
  previousResponseId?: string;
}

/**
/**
 * What one Gemini request's translations need besides its body (src/dialects/gemini.ts): whether
 * it streams, which the body does not say (the client called `:streamGenerateContent`).
 */
export interface GeminiTurn extends CarryTurn {
  stream: boolean;
}

/**
 * Per-request values a client format's translations need beyond the body: the seals bound to the
 * key (and a chat client's recalled state); Responses' and Gemini's own. Undefined where a caller
 * has none (a test, the echo model): seals are then stripped and nothing is remembered.
 */
export interface TurnOf {
  chat: ChatTurn | undefined;
  messages: CarryTurn | undefined;
  responses: ResponsesTurn;
  gemini: GeminiTurn;
}

/** What a request translation is told, whichever pair it translates. */
export interface TranslationContext<C extends WireFormat> {
  /** The llmux model id that answers (the candidate tried): what a translated answer names as its model. */
  modelId: string;
  /** The upstream model the body is shaped for. */
  model: UpstreamModel;
  /** Told about input that was repaired or dropped rather than refused (for the request log). */
  onWarning(message: string): void;
  turn: TurnOf[C];
}

/** What a stream translator is given, whichever direction it runs. */
export interface StreamTranslatorOptions {
  write(text: string): void;
  /** Input tokens to announce before the upstream reports usage. */
  estimatedInputTokens: number;
  /** The client asked for a usage report in its stream. */
  includeUsage: boolean;
  /** Told about input that was repaired rather than refused (for the request log). */
  onWarning(message: string): void;
}

/** What a whole-answer translation is given. */
export interface AnswerTranslatorOptions {
  /** Input tokens to report when the upstream reports none. */
  estimatedInputTokens: number;
  onWarning(message: string): void;
}

/** A translated stream: upstream events in, the client's events written as soon as they exist. */
export interface StreamTranslator {
  /** One parsed upstream event. */
  push(event: SseEvent): void;
  /** Upstream body ended cleanly. */
  end(): void;
  /** Upstream dropped / timed out / unreadable: emit the in-stream error, finish. */
  fail(message: string, type?: string): void;
  /** Terminal output written (normal end or error); later calls do nothing. */
  readonly finished: boolean;
  readonly failed: boolean;
  /** What the upstream reported, else the input estimate (for chat clients: zero). */
  usage(): TokenUsage;
}

/** A stream translator that may also assemble the client's whole answer (Responses: the response object, to store). */
export type AnsweringStreamTranslator = StreamTranslator & { answer?(): unknown };

/** A stream translator to a Responses client, which also gives the response object it built (to store, and to log). */
export interface ResponsesStreamTranslator extends StreamTranslator {
  /** The response object: final once `finished` (completed, incomplete or failed). */
  response(): ResponsesResponse;
}

/** One request translated: the upstream body, and how its answer is translated back. */
export interface TranslatedRequest<C extends WireFormat, U extends UpstreamFormat> {
  body: RequestOf[U];
  /** An upstream's whole answer, read leniently (it is not validated). */
  answer(answer: unknown, options: AnswerTranslatorOptions): AnswerOf[C];
  stream(options: StreamTranslatorOptions): AnsweringStreamTranslator;
}

/**
 * How one request's answer is translated back, without the upstream body it was built with: that
 * body is sent and let go, while the answer (a stream, perhaps for minutes) still needs these.
 */
export type AnswerTranslation<C extends WireFormat> = Pick<TranslatedRequest<C, UpstreamFormat>, 'answer' | 'stream'>;

/** Translates one client format to one upstream format, request by request. */
export interface Translation<C extends WireFormat, U extends UpstreamFormat> {
  request(body: RequestOf[C], context: TranslationContext<C>): TranslatedRequest<C, U>;
  /**
   * The request translator was read for what it does with text members' strings
   * (src/formats/text-members.ts) and only checks they are strings, passes them on, joins them or
   * compares them with '': it may be given a body read lazily, its references unresolved
   * (src/common/json-lazy.ts). Without this, a lazily read body is decoded whole first
   * (src/providers/upstream-body.ts): a translator that parses tool arguments or trims text would
   * read a reference's characters instead.
   */
  readonly readsLazily?: true;
}

// ---------- answers: an upstream format's decoder into a client format's encoder ----------

/** One upstream format's decoders, streamed and whole (./answer-events.ts), and what the relays read of its answers. */
export interface Decoder {
  stream(sink: AnswerEvents, options: DecoderOptions): StreamDecoder;
  whole(answer: unknown, sink: AnswerEvents): void;
  /** Event names its streams repeat, interned by the SSE parser. */
  readonly eventNames: readonly string[];
  /** The usage a whole answer reports (zeros when it reports none): what a translated whole answer is counted by. */
  usage(answer: Record<string, unknown>): TokenUsage;
}

/** The decoder of every format a provider speaks: a new upstream format (Gemini, Converse) is a row here. */
export const DECODERS: { readonly [U in ProviderFormat]: Decoder } = {
  chat: { stream: createChatStreamDecoder, whole: decodeChatAnswer, eventNames: [], usage: (answer) => fromChatUsage(chatUsageObject(answer)) },
  messages: { stream: createMessagesStreamDecoder, whole: decodeMessagesAnswer, eventNames: MESSAGES_EVENT_NAMES, usage: (answer) => fromMessagesUsage(asRecord(answer['usage'])) },
  gemini: { stream: createGeminiStreamDecoder, whole: decodeGeminiAnswer, eventNames: [], usage: (answer) => fromGeminiUsage(asRecord(answer['usageMetadata'])) },
  converse: { stream: createConverseStreamDecoder, whole: decodeConverseAnswer, eventNames: CONVERSE_EVENT_NAMES, usage: converseAnswerUsage },
};

/**
 * The decoder of an upstream format an answer is translated from.
 * @throws Error for the Responses format, which is never translated from (a Responses provider answers Responses clients only): a bug.
 */
export function decoderFor(format: UpstreamFormat): Decoder {
  if (format === 'responses') throw new Error('no decoder for the responses format: its answers are never translated');
  return DECODERS[format];
}

/**
 * The stream translator of `decoder` reading the upstream into `encoder`: every upstream event is
 * decoded and encoded at once (the decoder reads nothing after the answer's end).
 * `estimatedInputTokens` is the input `usage()` counts until the upstream reports usage.
 *
 * `finished` and `failed` are plain fields the decoder's ending sets: an object literal's accessor
 * costs a map of its own per instance, and a translator is made per request.
 */
export function translateStream(encoder: AnswerEncoder<unknown>, decoder: Decoder, options: DecoderOptions, estimatedInputTokens: number | undefined): StreamTranslator {
  const reader = decoder.stream(encoder, {
    onWarning: options.onWarning,
    onEnded(failed) {
      translator.finished = true;
      translator.failed = failed;
    },
  });
  const translator: { -readonly [K in keyof StreamTranslator]: StreamTranslator[K] } = {
    push: reader.push,
    end: reader.end,
    fail: reader.fail,
    finished: false,
    failed: false,
    usage(): TokenUsage {
      const reported = reader.reported();
      if (reported === undefined) return { inputTokens: tokenCount(estimatedInputTokens), outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 };
      return { inputTokens: reported.inputTokens, outputTokens: reported.outputTokens, cacheReadTokens: reported.cacheReadTokens, cacheCreationTokens: reported.cacheCreationTokens };
    },
  };
  return translator;
}

/** The whole answer `decoder` reads into `encoder`: the same events as a stream, written nowhere. */
export function translateWhole<A>(encoder: AnswerEncoder<A>, decoder: Decoder, answer: unknown): A {
  decoder.whole(answer, encoder);
  return encoder.answer();
}

/** Options of the chat -> messages stream translator. */
export interface ChatToMessagesStreamOptions extends MessagesEncoderOptions {
  write(text: string): void;
}

/** Options of the messages -> chat stream translator. */
export interface MessagesToChatStreamOptions extends ChatEncoderOptions {
  write(text: string): void;
  includeUsage: boolean;
  /** Told about upstream output that cannot be passed on (for the request log). */
  onWarning?: (message: string) => void;
}

/** Options of the stream translators to a Responses client. */
export interface ResponsesStreamOptions extends ResponsesAnswerOptions {
  write(text: string): void;
  /** Told about upstream output that cannot be expressed and is dropped (for the request log). */
  onWarning?: (message: string) => void;
}

/** Options of the whole-answer translators to chat and messages clients; `now` is injectable so tests need no real clock. */
export interface ResponseTranslateOptions {
  /** Milliseconds since the epoch, like `Date.now`. */
  now?: () => number;
  /** Told about output that was repaired rather than refused (for the request log). */
  onWarning?: (message: string) => void;
  /** The llmux model id the answer names; the upstream's `model` when absent. */
  model?: string;
  /** To a messages client: seals opaque state into thinking signatures (./carried.ts). */
  sealItem?: ((item: CarriedItem) => string) | undefined;
  /** To a chat client: told the state the server-side store keeps (./carry-recorder.ts). */
  recorder?: AnswerEvents | undefined;
}

/** A chat upstream's stream to a messages client (translation.md "Streams"). */
export function createChatToMessagesStream(options: ChatToMessagesStreamOptions): StreamTranslator {
  return translateStream(createMessagesEncoder(options), DECODERS.chat, options, options.estimatedInputTokens);
}

/** A messages upstream's stream to a chat client: usage is the upstream's only, as it always reports it. */
export function createMessagesToChatStream(options: MessagesToChatStreamOptions): StreamTranslator {
  return translateStream(createChatEncoder(options), DECODERS.messages, options, 0);
}

/** A chat upstream's stream to a Responses client (responses.md "Stream"). */
export function createChatToResponsesStream(options: ResponsesStreamOptions): ResponsesStreamTranslator {
  return responsesStream(options, DECODERS.chat);
}

/** A messages upstream's stream to a Responses client (responses.md "Stream"). */
export function createMessagesToResponsesStream(options: ResponsesStreamOptions): ResponsesStreamTranslator {
  return responsesStream(options, DECODERS.messages);
}

/** A stream to a Responses client from an upstream of `decoder`'s format. */
export function responsesStream(options: ResponsesStreamOptions, decoder: Decoder): ResponsesStreamTranslator {
  const encoder = createResponsesEncoder(options);
  return Object.assign(translateStream(encoder, decoder, options, options.estimatedInputTokens), { response: () => encoder.answer() });
}

/** A chat upstream's whole answer to a messages client (choice 0). */
export function chatResponseToMessages(answer: unknown, options: ResponseTranslateOptions = {}): MessagesResponse {
  return translateWhole(createMessagesEncoder(options), DECODERS.chat, answer);
}

/** A messages upstream's whole answer to a chat client. */
export function messagesResponseToChat(answer: unknown, options: ResponseTranslateOptions = {}): ChatResponse {
  return translateWhole(createChatEncoder(options), DECODERS.messages, answer);
}

/** A chat upstream's whole answer (choice 0) to a Responses client. */
export function chatResponseToResponses(answer: unknown, options: ResponsesAnswerOptions): ResponsesResponse {
  return translateWhole(createResponsesEncoder(options), DECODERS.chat, answer);
}

/** A messages upstream's whole answer to a Responses client. */
export function messagesResponseToResponses(answer: unknown, options: ResponsesAnswerOptions): ResponsesResponse {
  return translateWhole(createResponsesEncoder(options), DECODERS.messages, answer);
}

// ---------- the pairs ----------

/** The carry reader of one request translation: seals opened for the turn's key, sorted for the candidate upstream. */
function carryReader(context: TranslationContext<WireFormat>): CarryReader {
  return createCarryReader(context.turn, context.model.issuer, context.onWarning);
}

/** Seals state the candidate upstream issues for the turn's key; undefined without a turn or an issuer. */
function sealerFor(context: TranslationContext<WireFormat>): ((item: CarriedItem) => string) | undefined {
  const { turn } = context;
  const issuer = context.model.issuer;
  return turn === undefined || issuer === undefined ? undefined : (item) => turn.seal(issuer, item);
}

/** A chat client's answer's recorder, made per answer: it hands each call's state to the store (./carry-recorder.ts). */
function chatRecorder(context: TranslationContext<'chat'>): (() => AnswerEvents) | undefined {
  const { turn } = context;
  const issuer = context.model.issuer;
  return turn === undefined || issuer === undefined ? undefined : () => createCarryRecorder(issuer, turn.remember);
}

/**
 * A chat body for an OpenAI upstream gets the conversation's `prompt_cache_key` (the client's own,
 * else the turn's), so its prompt cache routes the conversation's turns alike (llmux.md section 11);
 * other chat upstreams may refuse the field.
 */
function withCacheKey(chat: RequestOf['chat'], clientKey: unknown, context: TranslationContext<WireFormat>): void {
  if (context.model.issuer?.family !== OPENAI_FAMILY) return;
  const key = typeof clientKey === 'string' && clientKey !== '' ? clientKey : context.turn?.cacheKey;
  if (key !== undefined) chat.prompt_cache_key = key;
}

const messagesToChat: Translation<'messages', 'chat'> = {
  // Joined and passed on as they are: its texts need no decoding (thinking and signatures, which
  // the carried state reads, are never left as bytes: src/formats/text-members.ts).
  readsLazily: true,
  request(body, context) {
    const { modelId, model, onWarning } = context;
    const carry = carryReader(context);
    const chat = messagesRequestToChat(body, model, { onWarning, carry });
    carry.finish();
    withCacheKey(chat, undefined, context);
    const sealItem = sealerFor(context);
    return {
      body: chat,
      answer: (answer, options) => chatResponseToMessages(answer, { model: modelId, onWarning: options.onWarning, sealItem }),
      stream: (options) => createChatToMessagesStream({ write: options.write, estimatedInputTokens: options.estimatedInputTokens, model: modelId, onWarning: options.onWarning, sealItem }),
    };
  },
};

const chatToMessages: Translation<'chat', 'messages'> = {
  request(body, context) {
    const { modelId, model, onWarning, turn } = context;
    const carry = carryReader(context);
    const messages = chatRequestToMessages(body, model, { onWarning, carry, recalled: turn?.recalled });
    carry.finish();
    const recorder = chatRecorder(context);
    return {
      body: messages,
      answer: (answer, options) => messagesResponseToChat(answer, { model: modelId, onWarning: options.onWarning, recorder: recorder?.() }),
      stream: ({ write, includeUsage, onWarning: warn }) => createMessagesToChatStream({ write, includeUsage, model: modelId, onWarning: warn, recorder: recorder?.() }),
    };
  },
};

/** The answer options of a Responses translation, from its request and turn. */
function responsesAnswerOptions(body: RequestOf['responses'], context: TranslationContext<'responses'>, toolNames: ToolNames, estimatedInputTokens: number): ResponsesAnswerOptions {
  const { turn } = context;
  const echo = responseEcho(body);
  if (turn.previousResponseId !== undefined) echo.previous_response_id = turn.previousResponseId;
  const options: ResponsesAnswerOptions = {
    model: context.modelId,
    echo,
    toolNames,
    responseId: turn.responseId,
    now: turn.now,
    estimatedInputTokens,
  };
  const sealItem = sealerFor(context);
  if (sealItem !== undefined) options.sealItem = sealItem;
  options.exposeSeals = turn.exposeSeals;
  if (turn.keepSealed !== undefined) options.keepSealed = turn.keepSealed;
  return options;
}

/** The stream translator with its response object as the assembled answer. */
function answering(translator: ResponsesStreamTranslator): AnsweringStreamTranslator {
  return Object.assign(translator, { answer: () => translator.response() });
}

const responsesToChat: Translation<'responses', 'chat'> = {
  request(body, context) {
    const carry = carryReader(context);
    const { body: chat, toolNames } = responsesRequestToChat(body, { model: context.model, carry, warn: context.onWarning });
    carry.finish();
    withCacheKey(chat, body.prompt_cache_key, context);
    return {
      body: chat,
      answer: (answer, { estimatedInputTokens }) => chatResponseToResponses(answer, responsesAnswerOptions(body, context, toolNames, estimatedInputTokens)),
      stream: ({ write, estimatedInputTokens, onWarning }) => answering(createChatToResponsesStream({ ...responsesAnswerOptions(body, context, toolNames, estimatedInputTokens), write, onWarning })),
    };
  },
};

const responsesToMessages: Translation<'responses', 'messages'> = {
  request(body, context) {
    const carry = carryReader(context);
    const { body: messages, toolNames } = responsesRequestToMessages(body, { model: context.model, carry, warn: context.onWarning });
    carry.finish();
    return {
      body: messages,
      answer: (answer, { estimatedInputTokens }) => messagesResponseToResponses(answer, responsesAnswerOptions(body, context, toolNames, estimatedInputTokens)),
      stream: ({ write, estimatedInputTokens, onWarning }) => answering(createMessagesToResponsesStream({ ...responsesAnswerOptions(body, context, toolNames, estimatedInputTokens), write, onWarning })),
    };
  },
};

const responsesToGemini: Translation<'responses', 'gemini'> = {
  request(body, context) {
    const carry = carryReader(context);
    const { body: gemini, toolNames } = responsesRequestToGemini(body, { model: context.model, carry, warn: context.onWarning });
    carry.finish();
    return {
      body: gemini,
      answer: (answer, { estimatedInputTokens }) => translateWhole(createResponsesEncoder(responsesAnswerOptions(body, context, toolNames, estimatedInputTokens)), DECODERS.gemini, answer),
      stream: ({ write, estimatedInputTokens, onWarning }) => answering(responsesStream({ ...responsesAnswerOptions(body, context, toolNames, estimatedInputTokens), write, onWarning }, DECODERS.gemini)),
    };
  },
};

/** A Converse upstream's answer for a messages client, whole and streamed; its reasoning sealed for the turn's key. */
function converseToMessages(modelId: string, sealItem: ((item: CarriedItem) => string) | undefined): AnswerTranslation<'messages'> {
  return {
    answer: (answer, { estimatedInputTokens, onWarning }) => translateWhole(createMessagesEncoder({ model: modelId, estimatedInputTokens, onWarning, sealItem }), DECODERS.converse, answer),
    stream: ({ write, estimatedInputTokens, onWarning }) => translateStream(createMessagesEncoder({ write, estimatedInputTokens, model: modelId, onWarning, sealItem }), DECODERS.converse, { onWarning }, estimatedInputTokens),
  };
}

/** A Converse upstream's answer for a chat client: usage comes last (`metadata`), which the chat encoder writes at the end. */
function converseToChat(modelId: string): AnswerTranslation<'chat'> {
  return {
    answer: (answer) => translateWhole(createChatEncoder({ model: modelId }), DECODERS.converse, answer),
    stream: ({ write, includeUsage, estimatedInputTokens, onWarning }) => translateStream(createChatEncoder({ write, includeUsage, model: modelId }), DECODERS.converse, { onWarning }, estimatedInputTokens),
  };
}

const chatToConverse: Translation<'chat', 'converse'> = {
  request: (body, { modelId, model, onWarning }) => ({ body: chatRequestToConverse(body, model, { onWarning }), ...converseToChat(modelId) }),
};

const messagesToConverse: Translation<'messages', 'converse'> = {
  request(body, context) {
    const carry = carryReader(context);
    const converse = messagesRequestToConverse(body, context.model, { onWarning: context.onWarning, carry });
    carry.finish();
    return { body: converse, ...converseToMessages(context.modelId, sealerFor(context)) };
  },
};

const responsesToConverse: Translation<'responses', 'converse'> = {
  request(body, context) {
    const carry = carryReader(context);
    const { body: converse, toolNames } = responsesRequestToConverse(body, { model: context.model, carry, warn: context.onWarning });
    carry.finish();
    return {
      body: converse,
      answer: (answer, { estimatedInputTokens }) => translateWhole(createResponsesEncoder(responsesAnswerOptions(body, context, toolNames, estimatedInputTokens)), DECODERS.converse, answer),
      stream: ({ write, estimatedInputTokens, onWarning }) => answering(responsesStream({ ...responsesAnswerOptions(body, context, toolNames, estimatedInputTokens), write, onWarning }, DECODERS.converse)),
    };
  },
};

const chatToGemini: Translation<'chat', 'gemini'> = {
  request(body, context) {
    const { modelId, model, onWarning, turn } = context;
    const carry = carryReader(context);
    const gemini = chatRequestToGemini(body, model, { onWarning, carry, recalled: turn?.recalled });
    carry.finish();
    const recorder = chatRecorder(context);
    return {
      body: gemini,
      answer: (answer) => translateWhole(createChatEncoder({ model: modelId, recorder: recorder?.() }), DECODERS.gemini, answer),
      stream: ({ write, includeUsage, estimatedInputTokens, onWarning: warn }) => translateStream(createChatEncoder({ write, includeUsage, model: modelId, recorder: recorder?.() }), DECODERS.gemini, { onWarning: warn }, estimatedInputTokens),
    };
  },
};

const messagesToGemini: Translation<'messages', 'gemini'> = {
  request(body, context) {
    const { modelId, model, onWarning } = context;
    const carry = carryReader(context);
    const gemini = messagesRequestToGemini(body, model, { onWarning, carry });
    carry.finish();
    const sealItem = sealerFor(context);
    return {
      body: gemini,
      answer: (answer, options) => translateWhole(createMessagesEncoder({ model: modelId, onWarning: options.onWarning, sealItem }), DECODERS.gemini, answer),
      stream: ({ write, estimatedInputTokens, onWarning: warn }) => translateStream(createMessagesEncoder({ write, estimatedInputTokens, model: modelId, onWarning: warn, sealItem }), DECODERS.gemini, { onWarning: warn }, estimatedInputTokens),
    };
  },
};

/** The Gemini encoder's options for an answer to `body`: its tool names, whether it asked for thoughts, and the seals of the turn's key. */
function geminiAnswerOptions(body: GeminiRequest, context: TranslationContext<'gemini'>, estimatedInputTokens: number, onWarning: (message: string) => void): GeminiEncoderOptions {
  const thinking = body.generationConfig?.thinkingConfig;
  return { model: context.modelId, toolNames: geminiToolNames(body), includeThoughts: thinking?.includeThoughts === true, estimatedInputTokens, onWarning, sealItem: sealerFor(context) };
}

/** A Gemini client's request to an upstream of `decoder`'s format, its body made by `translate` with the request's carry reader. */
function fromGemini<U extends ProviderFormat>(decoder: Decoder, translate: (body: GeminiRequest, context: TranslationContext<'gemini'>, carry: CarryReader) => RequestOf[U]): Translation<'gemini', U> {
  return {
    request(body, context) {
      const carry = carryReader(context);
      const translated = translate(body, context, carry);
      carry.finish();
      return {
        body: translated,
        answer: (answer, { estimatedInputTokens, onWarning }) => translateWhole(createGeminiEncoder(geminiAnswerOptions(body, context, estimatedInputTokens, onWarning)), decoder, answer),
        stream: ({ write, estimatedInputTokens, onWarning }) =>
          translateStream(createGeminiEncoder({ ...geminiAnswerOptions(body, context, estimatedInputTokens, onWarning), write }), decoder, { onWarning }, estimatedInputTokens),
      };
    },
  };
}

const geminiToChat = fromGemini<'chat'>(DECODERS.chat, (body, context, carry) => {
  const chat = geminiRequestToChat(body, context.model, { onWarning: context.onWarning, stream: context.turn.stream, carry });
  withCacheKey(chat, undefined, context);
  return chat;
});
const geminiToMessages = fromGemini<'messages'>(DECODERS.messages, (body, { model, onWarning, turn }, carry) => geminiRequestToMessages(body, model, { onWarning, stream: turn.stream, carry }));
// No Converse translator of its own: a Gemini request is read as a messages one, which Converse's translator takes.
const geminiToConverse = fromGemini<'converse'>(DECODERS.converse, (body, { model, onWarning, turn }, carry) =>
  messagesRequestToConverse(geminiRequestToMessages(body, model, { onWarning, stream: turn.stream, carry }), model, { onWarning, carry }),
);

/**
 * Every client format to every format a provider speaks natively. Nothing translates *to* the
 * Responses format: a provider serves it only besides chat (src/providers/upstream-body.ts).
 */
const TRANSLATIONS: { readonly [C in WireFormat]: { readonly [U in ProviderFormat]: Translation<C, U> | undefined } } = {
  chat: { chat: undefined, messages: chatToMessages, gemini: chatToGemini, converse: chatToConverse },
  messages: { chat: messagesToChat, messages: undefined, gemini: messagesToGemini, converse: messagesToConverse },
  responses: { chat: responsesToChat, messages: responsesToMessages, gemini: responsesToGemini, converse: responsesToConverse },
  gemini: { chat: geminiToChat, messages: geminiToMessages, gemini: undefined, converse: geminiToConverse },
};

/**
 * The translation from `client` to `upstream`, or undefined when they are the same format.
 * @throws Error for a pair no provider can be asked for (a chat client to a Responses-only upstream): a bug.
 */
export function translationFor<C extends WireFormat, U extends UpstreamFormat>(client: C, upstream: U): Translation<C, U> | undefined {
  if ((client as UpstreamFormat) === upstream) return undefined;
  if (upstream === 'responses') throw new Error(`no translation from ${client} to ${upstream}`);
  const row: { readonly [K in ProviderFormat]: Translation<C, K> | undefined } = TRANSLATIONS[client];
  return row[upstream as ProviderFormat] as Translation<C, U> | undefined;
}

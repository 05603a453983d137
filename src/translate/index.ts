/**
 * Which translators stand between a client's format and an upstream's: the translators' own
 * direction choice, made once per request. Same format has no translation (the answer passes
 * through as bytes).
 *
 * A translation is per request: `request()` translates the body and returns what turns this
 * request's answer back (a Responses request's tool names, its seals and its response id travel
 * from the request to the answer that way), so nothing of one request is kept in the table.
 */
import type { AnswerOf, ProviderFormat, RequestOf, SealableBlock, WireFormat } from '../formats/wire.ts';
import type { UpstreamModel } from './messages-to-chat.ts';
import { messagesRequestToChat, messagesResponseToChat } from './messages-to-chat.ts';
import { chatRequestToMessages, chatResponseToMessages } from './chat-to-messages.ts';
import { createChatToMessagesStream } from './stream-chat-to-messages.ts';
import type { StreamTranslator } from './stream-chat-to-messages.ts';
import { createMessagesToChatStream } from './stream-messages-to-chat.ts';
import { responsesRequestToChat } from './responses-to-chat.ts';
import { responsesRequestToMessages } from './responses-to-messages.ts';
import { chatResponseToResponses } from './chat-to-responses.ts';
import { messagesResponseToResponses } from './messages-to-responses.ts';
import { createChatToResponsesStream } from './stream-chat-to-responses.ts';
import { createMessagesToResponsesStream } from './stream-messages-to-responses.ts';
import type { ResponsesStreamTranslator } from './responses-events.ts';
import type { ResponsesAnswerOptions } from './responses-output.ts';
import { responseEcho } from './responses-output.ts';
import type { ToolNames } from './responses-tools.ts';

export type { UpstreamModel } from './messages-to-chat.ts';
export type { StreamTranslator } from './stream-chat-to-messages.ts';

/**
 * What one Responses request's translations need besides its body, made when the request arrives
 * (src/dialects/responses.ts): the response's id (known before the upstream answers, so the answer
 * can be stored under it), and sealed reasoning both ways.
 */
export interface ResponsesTurn {
  responseId: string;
  /** Milliseconds since the epoch, for `created_at`. */
  now(): number;
  /** Opens a replayed reasoning item's `encrypted_content` when llmux sealed it; undefined otherwise. */
  openSealed(sealed: string): SealableBlock | undefined;
  /** Seals reasoning into the client's copy of the answer: only when it asked for `reasoning.encrypted_content`. */
  seal?: (block: SealableBlock) => string;
  /** Told of each reasoning item's thinking as it closes, sealed for the client or not: the stored copy keeps it. */
  keepReasoning?: (itemId: string, block: SealableBlock) => void;
  /** The stored response the input was resolved from: the body sent on no longer names it, the answer does. */
  previousResponseId?: string;
}

/** Per-request values a client format's translations need beyond the body; only Responses has any. */
export interface TurnOf {
  chat: undefined;
  messages: undefined;
  responses: ResponsesTurn;
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

/** A stream translator that may also assemble the client's whole answer (Responses: the response object, to store). */
export type AnsweringStreamTranslator = StreamTranslator & { answer?(): unknown };

/** One request translated: the upstream body, and how its answer is translated back. */
export interface TranslatedRequest<C extends WireFormat, U extends WireFormat> {
  body: RequestOf[U];
  /** An upstream's whole answer, read leniently (it is not validated). */
  answer(answer: unknown, options: AnswerTranslatorOptions): AnswerOf[C];
  stream(options: StreamTranslatorOptions): AnsweringStreamTranslator;
}

/**
 * How one request's answer is translated back, without the upstream body it was built with: that
 * body is sent and let go, while the answer (a stream, perhaps for minutes) still needs these.
 */
export type AnswerTranslation<C extends WireFormat> = Pick<TranslatedRequest<C, WireFormat>, 'answer' | 'stream'>;

/** Translates one client format to one upstream format, request by request. */
export interface Translation<C extends WireFormat, U extends WireFormat> {
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

const messagesToChat: Translation<'messages', 'chat'> = {
  // Joined and passed on as they are: its texts need no decoding.
  readsLazily: true,
  request: (body, { modelId, model, onWarning }) => ({
    body: messagesRequestToChat(body, model, { onWarning }),
    answer: (answer, options) => chatResponseToMessages(answer, { model: modelId, onWarning: options.onWarning }),
    stream: (options) => createChatToMessagesStream({ write: options.write, estimatedInputTokens: options.estimatedInputTokens, model: modelId, onWarning: options.onWarning }),
  }),
};

const chatToMessages: Translation<'chat', 'messages'> = {
  request: (body, { modelId, model, onWarning }) => ({
    body: chatRequestToMessages(body, model, { onWarning }),
    answer: (answer, options) => messagesResponseToChat(answer, { model: modelId, onWarning: options.onWarning }),
    stream: ({ write, includeUsage }) => createMessagesToChatStream({ write, includeUsage, model: modelId }),
  }),
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
  if (turn.seal !== undefined) options.seal = turn.seal;
  if (turn.keepReasoning !== undefined) options.keepReasoning = turn.keepReasoning;
  return options;
}

/** The stream translator with its response object as the assembled answer. */
function answering(translator: ResponsesStreamTranslator): AnsweringStreamTranslator {
  return Object.assign(translator, { answer: () => translator.response() });
}

const responsesToChat: Translation<'responses', 'chat'> = {
  request(body, context) {
    const { body: chat, toolNames } = responsesRequestToChat(body, { model: context.model, openSealed: context.turn.openSealed, warn: context.onWarning });
    return {
      body: chat,
      answer: (answer, { estimatedInputTokens }) => chatResponseToResponses(answer as AnswerOf['chat'], responsesAnswerOptions(body, context, toolNames, estimatedInputTokens)),
      stream: ({ write, estimatedInputTokens, onWarning }) => answering(createChatToResponsesStream({ ...responsesAnswerOptions(body, context, toolNames, estimatedInputTokens), write, onWarning })),
    };
  },
};

const responsesToMessages: Translation<'responses', 'messages'> = {
  request(body, context) {
    const { body: messages, toolNames } = responsesRequestToMessages(body, { model: context.model, openSealed: context.turn.openSealed, warn: context.onWarning });
    return {
      body: messages,
      answer: (answer, { estimatedInputTokens }) => messagesResponseToResponses(answer as AnswerOf['messages'], responsesAnswerOptions(body, context, toolNames, estimatedInputTokens)),
      stream: ({ write, estimatedInputTokens, onWarning }) => answering(createMessagesToResponsesStream({ ...responsesAnswerOptions(body, context, toolNames, estimatedInputTokens), write, onWarning })),
    };
  },
};

/**
 * Every client format to every format a provider speaks natively. Nothing translates *to* the
 * Responses format: a provider serves it only besides chat (src/providers/upstream-body.ts).
 */
const TRANSLATIONS: { readonly [C in WireFormat]: { readonly [U in ProviderFormat]: Translation<C, U> | undefined } } = {
  chat: { chat: undefined, messages: chatToMessages },
  messages: { chat: messagesToChat, messages: undefined },
  responses: { chat: responsesToChat, messages: responsesToMessages },
};

/**
 * The translation from `client` to `upstream`, or undefined when they are the same format.
 * @throws Error for a pair no provider can be asked for (a chat client to a Responses-only upstream): a bug.
 */
export function translationFor<C extends WireFormat, U extends WireFormat>(client: C, upstream: U): Translation<C, U> | undefined {
  if ((client as WireFormat) === upstream) return undefined;
  if (upstream === 'responses') throw new Error(`no translation from ${client} to ${upstream}`);
  const row: { readonly [K in ProviderFormat]: Translation<C, K> | undefined } = TRANSLATIONS[client];
  return row[upstream as ProviderFormat] as Translation<C, U> | undefined;
}

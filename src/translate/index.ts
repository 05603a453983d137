/**
 * Which translators stand between a client's format and an upstream's: the translators' own
 * direction choice, made once per request. Same format has no translation (the answer passes
 * through as bytes).
 */
import type { AnswerOf, RequestOf, WireFormat } from '../formats/wire.ts';
import type { UpstreamModel } from './messages-to-chat.ts';
import { messagesRequestToChat, messagesResponseToChat } from './messages-to-chat.ts';
import { chatRequestToMessages, chatResponseToMessages } from './chat-to-messages.ts';
import { createChatToMessagesStream } from './stream-chat-to-messages.ts';
import type { StreamTranslator } from './stream-chat-to-messages.ts';
import { createMessagesToChatStream } from './stream-messages-to-chat.ts';

export type { UpstreamModel } from './messages-to-chat.ts';
export type { StreamTranslator } from './stream-chat-to-messages.ts';

/** What a stream translator is given, whichever direction it runs. */
export interface StreamTranslatorOptions {
  write(text: string): void;
  /** Input tokens to announce before the upstream reports usage. */
  estimatedInputTokens: number;
  /** The client asked for a usage report in its stream. */
  includeUsage: boolean;
  /** Told about input that was repaired rather than refused (for the request log). */
  onWarning(message: string): void;
  /** The llmux model id that answered: every event names it. */
  model: string;
}

/** Translates one client format to one upstream format and the answers back. */
export interface Translation<C extends WireFormat, U extends WireFormat> {
  request(body: RequestOf[C], model: UpstreamModel, onWarning: (message: string) => void): RequestOf[U];
  /** An upstream's whole answer, read leniently (it is not validated), naming the llmux `model` that answered. */
  answer(answer: unknown, model: string, onWarning: (message: string) => void): AnswerOf[C];
  stream(options: StreamTranslatorOptions): StreamTranslator;
}

const messagesToChat: Translation<'messages', 'chat'> = {
  request: (body, model, onWarning) => messagesRequestToChat(body, model, { onWarning }),
  answer: (answer, model, onWarning) => chatResponseToMessages(answer, { model, onWarning }),
  stream: ({ write, estimatedInputTokens, model, onWarning }) => createChatToMessagesStream({ write, estimatedInputTokens, model, onWarning }),
};

const chatToMessages: Translation<'chat', 'messages'> = {
  request: (body, model, onWarning) => chatRequestToMessages(body, model, { onWarning }),
  answer: (answer, model, onWarning) => messagesResponseToChat(answer, { model, onWarning }),
  stream: ({ write, includeUsage, model }) => createMessagesToChatStream({ write, includeUsage, model }),
};

const TRANSLATIONS: { readonly [C in WireFormat]: { readonly [U in WireFormat]?: Translation<C, U> } } = {
  chat: { messages: chatToMessages },
  messages: { chat: messagesToChat },
};

/** The translation from `client` to `upstream`, or undefined when they are the same format. */
export function translationFor<C extends WireFormat, U extends WireFormat>(client: C, upstream: U): Translation<C, U> | undefined {
  const row: { readonly [K in WireFormat]?: Translation<C, K> } = TRANSLATIONS[client];
  return row[upstream];
}

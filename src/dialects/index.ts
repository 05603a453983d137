/**
 * The dialect table: one entry per wire format (see ./dialect.ts). A new format is one new entry
 * here (and its translators in src/translate/); nothing else branches on the format.
 */
import type { WireFormat } from '../formats/wire.ts';
import type { Dialect } from './dialect.ts';
import { chatDialect } from './chat.ts';
import { messagesDialect } from './messages.ts';
import { responsesDialect } from './responses.ts';
import { geminiDialect } from './gemini.ts';

export type { Arrival, Dialect, DialectServices, ForwardedHeaders, ReadRequest, RequestFacts, TextAnswer, Turn, TurnScope } from './dialect.ts';

export const dialects: { readonly [F in WireFormat]: Dialect<F> } = {
  chat: chatDialect,
  messages: messagesDialect,
  responses: responsesDialect,
  gemini: geminiDialect,
};

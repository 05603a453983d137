/**
 * Every recorded upstream answer, translated for every client format, against the official schemas
 * (test/helpers/schemas.ts): each event of the translated stream and the whole translated answer.
 * The e2e tests check what they see through a gateway; this covers every recording and every pair.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { ProviderFormat } from '../../src/formats/wire.ts';
import { createSseParser } from '../../src/sse/parser.ts';
import type { AnswerEncoder } from '../../src/translate/answer-events.ts';
import { createChatEncoder } from '../../src/translate/chat-encoder.ts';
import { createMessagesEncoder } from '../../src/translate/messages-encoder.ts';
import { createResponsesEncoder } from '../../src/translate/responses-encoder.ts';
import { DECODERS, translateStream, translateWhole } from '../../src/translate/index.ts';
import { answerProblems, streamAnswerProblems } from '../helpers/answer-check.ts';
import { answerOptions } from '../helpers/responses-stream.ts';
import { FIXTURES, GEMINI_FIXTURES } from '../helpers/fake-upstream.ts';
import { fileURLToPath } from 'node:url';

type ClientFormat = 'chat' | 'messages' | 'responses';

const ENCODERS: Record<ClientFormat, (write?: (text: string) => void) => AnswerEncoder<unknown>> = {
  messages: (write) => createMessagesEncoder({ ...(write === undefined ? {} : { write }), model: 'llmux-model', estimatedInputTokens: 7 }),
  chat: (write) => createChatEncoder({ ...(write === undefined ? {} : { write }), includeUsage: true, model: 'llmux-model' }),
  responses: (write) => createResponsesEncoder({ ...answerOptions(), ...(write === undefined ? {} : { write }) }),
};
/** Each upstream format's answers: the recorded ones, and the hand-made Gemini and Converse ones (their folders' READMEs). */
const RECORDINGS: Record<ProviderFormat, { folder: string; names: RegExp }> = {
  chat: { folder: FIXTURES, names: /^(openai|deepseek|xai|groq|azure)-/ },
  messages: { folder: FIXTURES, names: /^anthropic-/ },
  gemini: { folder: GEMINI_FIXTURES, names: /^(?!request-|error-)/ },
  converse: { folder: fileURLToPath(new URL('../fixtures/converse/', import.meta.url)), names: /^converse-/ },
};

for (const [upstream, { folder, names: recordings }] of Object.entries(RECORDINGS) as Array<[ProviderFormat, { folder: string; names: RegExp }]>) {
  for (const client of Object.keys(ENCODERS) as ClientFormat[]) {
    if (client === upstream) continue;
    describe(`${upstream} upstream -> ${client} client, against the official schemas`, () => {
      for (const name of readdirSync(folder).filter((file) => recordings.test(file)).sort()) {
        const bytes = readFileSync(`${folder}${name}`);
        if (name.endsWith('.sse')) {
          it(`writes ${name} as events that match them`, () => {
            let output = '';
            const translator = translateStream(ENCODERS[client]((text) => (output += text)), DECODERS[upstream], {}, 7);
            const parser = createSseParser({ onEvent: (event) => translator.push(event) });
            parser.feed(bytes);
            parser.end();
            translator.end();
            assert.deepEqual(streamAnswerProblems(client, output), []);
          });
        } else if (name.endsWith('.json')) {
          const answer = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
          // Error bodies are answered before any translation (src/providers/upstream-errors.ts).
          if (answer['error'] !== undefined || answer['type'] === 'error') continue;
          it(`writes ${name} as an answer that matches them`, () => {
            assert.deepEqual(answerProblems(client, translateWhole(ENCODERS[client](), DECODERS[upstream], answer)), []);
          });
        }
      }
    });
  }
}

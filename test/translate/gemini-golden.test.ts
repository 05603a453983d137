/**
 * Golden outputs of the answer translations that involve Gemini (ARCHITECTURE.md "Golden files"):
 * every hand-made Gemini answer (test/fixtures/gemini/) as each other client format gets it, and
 * every recorded chat and messages answer (test/fixtures/upstream/) as a Gemini client gets it,
 * streamed and whole. One golden file per fixture and direction, under
 * test/translate/golden/<upstream>-to-<client>/; `UPDATE_GOLDEN=1` rewrites them (read every
 * changed one against llmux.md section 9 before committing it). Splits and the agreement of a
 * stream with its whole answer are the pair suite's (./answer-pairs.test.ts).
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createSseParser } from '../../src/sse/parser.ts';
import type { AnswerEncoder } from '../../src/translate/answer-events.ts';
import { createChatEncoder } from '../../src/translate/chat-encoder.ts';
import { createMessagesEncoder } from '../../src/translate/messages-encoder.ts';
import { createResponsesEncoder } from '../../src/translate/responses-encoder.ts';
import { createGeminiEncoder } from '../../src/translate/gemini-encoder.ts';
import { DECODERS, type Decoder, translateStream, translateWhole } from '../../src/translate/index.ts';
import { FIXTURES, GEMINI_FIXTURES } from '../helpers/fake-upstream.ts';
import { answerOptions } from '../helpers/responses-stream.ts';

const GOLDEN = new URL('./golden/', import.meta.url);
const UPDATE_GOLDEN = process.env['UPDATE_GOLDEN'] === '1';
const ESTIMATE = 7;

type Encoders = (write?: (text: string) => void) => AnswerEncoder<unknown>;

const ENCODERS: Record<'chat' | 'messages' | 'responses' | 'gemini', Encoders> = {
  chat: (write) => createChatEncoder({ ...(write === undefined ? {} : { write }), includeUsage: true, completionId: 'chatcmpl-golden', now: () => 1_700_000_000_000, model: 'llmux-model' }),
  messages: (write) => createMessagesEncoder({ ...(write === undefined ? {} : { write }), messageId: 'msg_golden', model: 'llmux-model', estimatedInputTokens: ESTIMATE }),
  responses: (write) => createResponsesEncoder({ ...answerOptions(), ...(write === undefined ? {} : { write }) }),
  gemini: (write) => createGeminiEncoder({ ...(write === undefined ? {} : { write }), model: 'llmux-model', responseId: 'resp-golden', includeThoughts: true, estimatedInputTokens: ESTIMATE }),
};

interface Direction {
  name: string;
  dir: string;
  fixtures: RegExp;
  decoder: Decoder;
  encoder: Encoders;
}

const GEMINI_ANSWERS = /^(?!request-|error-).*\.(sse|json)$/;
const DIRECTIONS: readonly Direction[] = [
  { name: 'gemini-to-chat', dir: GEMINI_FIXTURES, fixtures: GEMINI_ANSWERS, decoder: DECODERS.gemini, encoder: ENCODERS.chat },
  { name: 'gemini-to-messages', dir: GEMINI_FIXTURES, fixtures: GEMINI_ANSWERS, decoder: DECODERS.gemini, encoder: ENCODERS.messages },
  { name: 'gemini-to-responses', dir: GEMINI_FIXTURES, fixtures: GEMINI_ANSWERS, decoder: DECODERS.gemini, encoder: ENCODERS.responses },
  { name: 'chat-to-gemini', dir: FIXTURES, fixtures: /^(openai|deepseek|xai|groq|azure)-.*\.(sse|json)$/, decoder: DECODERS.chat, encoder: ENCODERS.gemini },
  { name: 'messages-to-gemini', dir: FIXTURES, fixtures: /^anthropic-.*\.(sse|json)$/, decoder: DECODERS.messages, encoder: ENCODERS.gemini },
];

/** A fixture translated: a stream's output as written, a whole answer's as indented JSON. */
function translate(direction: Direction, name: string): string {
  const bytes = readFileSync(`${direction.dir}${name}`);
  if (name.endsWith('.json')) return `${JSON.stringify(translateWhole(direction.encoder(), direction.decoder, JSON.parse(bytes.toString('utf8'))), null, 2)}\n`;
  let output = '';
  const translator = translateStream(direction.encoder((text) => (output += text)), direction.decoder, {}, ESTIMATE);
  const parser = createSseParser({ onEvent: (event) => translator.push(event) });
  parser.feed(bytes);
  parser.end();
  translator.end();
  assert.equal(translator.finished, true);
  return output;
}

/** Whole fixtures that are error bodies: answered before any translation (src/providers/upstream-errors.ts). */
function isErrorBody(direction: Direction, name: string): boolean {
  if (!name.endsWith('.json')) return false;
  const body = JSON.parse(readFileSync(`${direction.dir}${name}`, 'utf8')) as Record<string, unknown>;
  return body['error'] !== undefined || body['type'] === 'error';
}

for (const direction of DIRECTIONS) {
  describe(`the ${direction.name} answers`, () => {
    const golden = new URL(`${direction.name}/`, GOLDEN);
    const names = readdirSync(direction.dir).filter((name) => direction.fixtures.test(name) && !isErrorBody(direction, name)).sort();
    if (UPDATE_GOLDEN) mkdirSync(golden, { recursive: true });

    it('has a golden output for every fixture and no other', () => {
      assert.ok(names.length >= 6);
      if (!UPDATE_GOLDEN) assert.deepEqual(readdirSync(golden).sort(), names);
    });

    for (const name of names) {
      it(`translates ${name} to its golden output`, () => {
        const output = translate(direction, name);
        if (UPDATE_GOLDEN) writeFileSync(new URL(name, golden), output);
        assert.equal(output, readFileSync(new URL(name, golden), 'utf8'));
      });
    }
  });
}

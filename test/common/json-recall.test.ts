/**
 * A key's last long body remembered (src/common/json-recall.ts): a body read from the last one
 * must be what reading it whole gives (test/dialects/read.test.ts holds whole requests, facts and
 * upstream bytes to that on a session's turns); here, the memory's own rules: which bodies it
 * serves, its bounds, its scopes, its frozen values, and seeded random edits of a turn.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countingRecall } from '../helpers/recall.ts';
import type { JsonRecall } from '../../src/common/json-recall.ts';
import { realValue } from '../../src/common/json-lazy.ts';
import { readJsonObject } from '../../src/http/body.ts';
import { LAZY_REQUEST_MEMBERS } from '../../src/formats/text-members.ts';
import { estimateTokens } from '../../src/formats/estimate.ts';
import { agentMessagesBody, agentTurns } from '../../bench/agent-body.ts';
import { seededRandom } from '../helpers/split.ts';

const MAX_DEPTH = 64;

/** Reads `json` through the memory and checks it against the whole parse; returns the read. */
function readChecked(memory: JsonRecall, json: string, scope = 'key'): ReturnType<typeof readJsonObject> {
  let whole: unknown;
  let wholeError: string | undefined;
  try {
    whole = readJsonObject(Buffer.from(json), LAZY_REQUEST_MEMBERS);
  } catch (err) {
    wholeError = (err as Error).message;
  }
  if (wholeError !== undefined) {
    assert.throws(() => readJsonObject(Buffer.from(json), LAZY_REQUEST_MEMBERS, { memory, scope }), { message: wholeError });
    return undefined as never;
  }
  const read = readJsonObject(Buffer.from(json), LAZY_REQUEST_MEMBERS, { memory, scope });
  assert.deepEqual(realValue(read.value, read.texts), JSON.parse(json));
  assert.deepEqual(read.members, (whole as typeof read).members);
  const body = read.value as { system?: unknown; messages?: unknown; tools?: unknown };
  const wholeBody = JSON.parse(json) as typeof body;
  assert.equal(estimateTokens([body.system, body.messages, body.tools], read.texts), estimateTokens([wholeBody.system, wholeBody.messages, wholeBody.tools]));
  return read;
}

describe('the last long body of a key, remembered', () => {
  it('serves the next turns, the same bytes again and an older turn from it, each as the whole parse reads it', () => {
    const { memory, served } = countingRecall();
    const turns = [agentMessagesBody('m', false), ...agentTurns('m', 3)];
    for (const json of [...turns, turns[3] as string, turns[1] as string]) readChecked(memory, json);
    assert.equal(served(), 5);
  });

  it('keeps each of a key\'s sessions at once: turns of two sessions interleaved are read from their own last turns', () => {
    const { memory, served } = countingRecall();
    const a = [agentMessagesBody('m', false), ...agentTurns('m', 3)];
    /** The same turns in another session: its first message differs (another subagent's task). */
    const b = a.map((json) => {
      const body = JSON.parse(json) as { messages: Array<{ content: Array<{ text: string }> }> };
      const first = body.messages[0]?.content[0] as { text: string };
      first.text = `Another task. ${first.text}`;
      return JSON.stringify(body);
    });
    const firstMessages: Array<[unknown, unknown]> = [];
    for (let i = 0; i < a.length; i++) {
      const fromA = readChecked(memory, a[i] as string).value as { messages: unknown[] };
      const fromB = readChecked(memory, b[i] as string).value as { messages: unknown[] };
      firstMessages.push([fromA.messages[0], fromB.messages[0]]);
    }
    assert.equal(served(), 2 * a.length - 1, 'every body but the first was read from a remembered one');
    // Read from its own session's last turn, a turn keeps its first message's object: read from the
    // other session's, it would be parsed anew.
    for (let i = 1; i < a.length; i++) {
      assert.equal(firstMessages[i]?.[0], firstMessages[0]?.[0], `session a, turn ${i}`);
      assert.equal(firstMessages[i]?.[1], firstMessages[0]?.[1], `session b, turn ${i}`);
    }
    assert.equal(memory.size().bodies, 2);
  });

  it('puts a body read whole in the place of the body it repeats nearly to its end, not beside it', () => {
    const { memory, served } = countingRecall();
    const json = agentMessagesBody('m', false);
    readChecked(memory, json);
    // A change outside the messages, near the end: read whole, the same session.
    readChecked(memory, json.replace('"stream":false}', '"stream":false,"top_k":5}'));
    assert.equal(served(), 0);
    assert.equal(memory.size().bodies, 1);
  });

  it('keeps at most four sessions of a key, the least recently used going first', () => {
    const { memory } = countingRecall();
    const base = agentMessagesBody('m', false);
    for (let k = 0; k < 6; k++) readChecked(memory, base.replace('<system-reminder>', `<system-reminder>${k}`));
    assert.equal(memory.size().bodies, 4);
    readChecked(memory, base.replace('"max_tokens":32000', '"max_tokens":32001'), 'another key');
    assert.equal(memory.size().bodies, 5);
  });

  it('gives each read its own top-level object, the remembered values frozen: a rule that changed them in place would throw', () => {
    const { memory } = countingRecall();
    const json = agentMessagesBody('m', false);
    const first = readChecked(memory, json);
    const second = readChecked(memory, json);
    assert.notEqual(first.value, second.value);
    assert.equal(first.value['messages'], second.value['messages']);
    second.value['model'] = 'changed';
    assert.equal(first.value['model'], 'm');
    const messages = second.value['messages'] as Array<{ content: unknown[] }>;
    assert.throws(() => { messages.push({ content: [] }); }, TypeError);
    assert.throws(() => { (messages[0] as { content: unknown[] }).content = []; }, TypeError);
  });

  it('reads whole a body that changed outside one array, and one whose key or format scope never read before', () => {
    const { memory, served } = countingRecall();
    const json = agentMessagesBody('m', false);
    readChecked(memory, json);
    readChecked(memory, json.replace('"max_tokens":32000', '"max_tokens":32001'));
    assert.equal(served(), 0);
    readChecked(memory, json, 'another key');
    assert.equal(served(), 0);
  });

  it('holds at most its bytes, the least recently used going first, and serves nothing older than its age', () => {
    let now = 0;
    const json = agentMessagesBody('m', false);
    const size = Buffer.byteLength(json);
    const { memory, served } = countingRecall({ maxBytes: 2 * size + 10, maxAgeMs: 1_000, now: () => now });
    readChecked(memory, json, 'a');
    readChecked(memory, json, 'b');
    readChecked(memory, json, 'a');
    readChecked(memory, json, 'c');
    assert.deepEqual(memory.size(), { bodies: 2, bytes: 2 * size });
    readChecked(memory, json, 'b');
    assert.equal(served(), 1, 'b was let go for c, a was used since');
    now += 1_001;
    readChecked(memory, json, 'c');
    assert.equal(served(), 1, 'too old to be compared with');
    const small = countingRecall({ maxBodyBytes: size - 1 });
    readChecked(small.memory, json);
    readChecked(small.memory, json);
    assert.deepEqual([small.memory.size().bodies, small.served()], [0, 0], 'a body over maxBodyBytes is not remembered');
  });

  it('agrees with the whole parse on seeded random edits of a turn: bytes changed, items added, left out or broken', () => {
    const random = seededRandom(26);
    const turns = [agentMessagesBody('m', false), ...agentTurns('m', 2)];
    const { memory, served } = countingRecall();
    const edits = [
      (json: string): string => {
        const at = json.indexOf('"messages"') + 20 + Math.floor(random() * (json.length - json.indexOf('"messages"') - 40));
        return json.slice(0, at) + 'x' + json.slice(at + 1);
      },
      (json: string): string => {
        const body = JSON.parse(json) as { messages: unknown[] };
        body.messages.splice(Math.floor(random() * body.messages.length), 1 + Math.floor(random() * 3));
        return JSON.stringify(body);
      },
      (json: string): string => {
        const body = JSON.parse(json) as { messages: unknown[] };
        body.messages.splice(Math.floor(random() * body.messages.length), 0, { role: 'user', content: [{ type: 'text', text: 'new '.repeat(100 * random()) }] });
        return JSON.stringify(body);
      },
      (json: string): string => {
        const at = json.indexOf('},{', json.indexOf('"messages"') + Math.floor(random() * 100_000));
        return at === -1 ? json : json.slice(0, at + 1) + json.slice(at + 2);
      },
    ];
    for (let round = 0; round < 60; round++) {
      const base = turns[Math.floor(random() * turns.length)] as string;
      const edit = edits[Math.floor(random() * edits.length)] as (json: string) => string;
      readChecked(memory, edit(base));
    }
    assert.ok(served() > 20, `${served()} served`);
  });

  it('finds where a body parts from the last one wherever that is against the pieces it compares at once (16 KB)', () => {
    const { memory, served } = countingRecall();
    const base = agentMessagesBody('m', false);
    const start = base.indexOf('"messages"');
    readChecked(memory, base);
    let edited = 0;
    for (let block = 1; block <= 12; block++) {
      for (const offset of [-65, -64, -1, 0, 1, 63, 64]) {
        // The first letter at or after the place, changed into another: the body stays valid JSON.
        let at = block * 16 * 1024 + offset;
        while (at < base.length && !/[a-z]/.test(base[at] as string)) at++;
        if (at <= start || at >= base.length - 100) continue;
        const json = base.slice(0, at) + (base[at] === 'q' ? 'r' : 'q') + base.slice(at + 1);
        readChecked(memory, json);
        readChecked(memory, base);
        edited++;
      }
    }
    assert.ok(edited >= 30, `${edited} places`);
    assert.ok(served() >= 2 * edited, `${served()} served of ${2 * edited}`);
  });

  it('keeps its table of references bounded while turns shrink and grow', () => {
    const { memory } = countingRecall();
    const small = agentMessagesBody('m', false, 100 * 1024);
    const large = agentMessagesBody('m', false, 300 * 1024);
    for (let i = 0; i < 20; i++) {
      const read = readChecked(memory, i % 2 === 0 ? large : small);
      const used = (read.texts?.spans.length ?? 0) / 2;
      assert.ok((read.texts?.units.length ?? 0) <= 2 * used + 256 + used);
    }
  });

  it('compares a body as long as the one remembered but for its end, and leaves a body with no lazy texts to the whole read', () => {
    const { memory } = countingRecall();
    const json = agentMessagesBody('m', false);
    readChecked(memory, json);
    readChecked(memory, json.slice(0, -1));
    readChecked(memory, `${json.slice(0, -1)},"extra":1}`);
    assert.equal(memory.recall('key', Buffer.from('{}'), LAZY_REQUEST_MEMBERS, MAX_DEPTH), undefined);
  });
});

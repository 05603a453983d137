/**
 * The WebAssembly text counter (src/common/text-scan.ts) against the JavaScript loop it stands in
 * for (`stringUnits`, src/common/json-lazy.ts) and against JSON.parse itself: the same length, and
 * the same refusals, on every kind of text, at every position relative to its sixteen-byte blocks.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_SCANNED_BYTES, createTextScanner, textScanModule } from '../../src/common/text-scan.ts';
import { stringUnits, wordsOf } from '../../src/common/json-lazy.ts';
import { seededRandom as random } from '../helpers/split.ts';

const scanner = createTextScanner();

/** What JSON.parse says of the text between quotes: its length, or -1 when it refuses it. */
function parsedUnits(inner: string): number {
  try {
    return (JSON.parse(`"${inner}"`) as string).length;
  } catch {
    return -1;
  }
}

function jsUnits(bytes: Buffer, start: number, end: number): number {
  return stringUnits(bytes, wordsOf(bytes), start, end);
}

function wasmUnits(bytes: Buffer, start: number, end: number): number {
  return scanner?.units(bytes, [start, end])?.[0] ?? -1;
}

/** Pieces of JSON string text: plain, escapes (good and bad), two- to four-byte characters, control characters. */
const PIECES = ['a', 'Z', ' ', '0', '~', '\\n', '\\"', '\\\\', '\\/', '\\t', '\\u00e9', '\\uD83D\\uDE00', '\\u12G4', '\\x', '\u00e9', '\u20ac', '\u{1f600}', '\u0001', '\t', '\u007f', '\u00ff'];
const BAD = new Set(['\\u12G4', '\\x', '\u0001', '\t']);

function text(next: () => number, length: number, bad: boolean): string {
  let out = '';
  while (out.length < length) {
    const piece = PIECES[Math.floor(next() * PIECES.length)] as string;
    if (!bad && BAD.has(piece)) continue;
    // Long plain runs, as real text has: the sixteen-byte path is taken.
    out += next() < 0.5 ? piece : 'plain text goes on '.repeat(1 + Math.floor(next() * 3));
  }
  return out;
}

describe('the WebAssembly text counter', () => {
  it('is there on this Node (the JavaScript loop stands in where it is not)', () => {
    assert.ok(scanner !== undefined);
    assert.ok(textScanModule().length < 1024, 'a module of a few hundred bytes');
  });

  it('counts what JSON.parse counts, and refuses what it refuses, text by text', () => {
    const cases = ['', 'hello', 'a'.repeat(15), 'a'.repeat(16), 'a'.repeat(17), 'a'.repeat(31) + '\\n', 'caf\u00e9 \u{1f600} \u20ac'.repeat(7),
      '\\"quoted\\" and \\\\ back\\/slash \\b\\f\\n\\r\\t', '\\u00e9\\uD83D\\uDE00'.repeat(3), 'x\\', 'x'.repeat(20) + '\\u12', 'x'.repeat(20) + '\\u12z4', 'bad \\a escape',
      'raw\ttab', 'raw\nnewline', '\u0000', 'a\u001fb', 'x'.repeat(40) + '\u007f' + 'y'.repeat(40)];
    for (const inner of cases) {
      const bytes = Buffer.from(inner);
      const expected = parsedUnits(inner);
      assert.equal(wasmUnits(bytes, 0, bytes.length), expected, JSON.stringify(inner));
      assert.equal(jsUnits(bytes, 0, bytes.length), expected, JSON.stringify(inner));
    }
  });

  it('agrees with the JavaScript loop and JSON.parse on random texts at every offset', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed);
      const inner = text(next, Math.floor(next() * 300), next() < 0.3);
      // The text at an offset of 0-17 bytes inside a larger body, so every alignment is met.
      const offset = seed % 18;
      const bytes = Buffer.concat([Buffer.from('{"k":"'.padEnd(offset + 6, ' ')), Buffer.from(inner), Buffer.from('"}')]);
      const start = offset + 6;
      const end = bytes.length - 2;
      const expected = parsedUnits(inner);
      assert.equal(wasmUnits(bytes, start, end), expected, `seed ${seed}`);
      assert.equal(jsUnits(bytes, start, end), expected, `seed ${seed}`);
    }
  });

  it('counts many texts of one body, growing its memory for a longer body, and refuses a body whose one text is bad', () => {
    const counter = createTextScanner();
    assert.ok(counter !== undefined);
    const next = random(7);
    for (const size of [1_000, 200_000, 70_000, 1_500_000]) {
      const texts = [text(next, size / 4, false), text(next, size / 4, false), text(next, 10, false)];
      const body = Buffer.from(`{"a":"${texts[0]}","b":"${texts[1]}","c":"${texts[2]}"}`);
      const spans: number[] = [];
      let from = 0;
      for (const part of texts) {
        const start = body.indexOf(`"${part}"`, from) + 1;
        const end = start + Buffer.byteLength(part);
        spans.push(start, end);
        from = end;
      }
      assert.deepEqual(counter.units(body, spans), texts.map(parsedUnits), `a body of ${body.length} bytes`);
      const bad = Buffer.from(body);
      bad[(spans[2] as number)] = 0x01;
      assert.equal(counter.units(bad, spans), undefined);
    }
    assert.throws(() => counter.units(Buffer.alloc(MAX_SCANNED_BYTES + 1), []), RangeError);
  });

  it('is not made where there is no WebAssembly', () => {
    const saved = Object.getOwnPropertyDescriptor(globalThis, 'WebAssembly') as PropertyDescriptor;
    Reflect.deleteProperty(globalThis, 'WebAssembly');
    try {
      assert.equal(createTextScanner(), undefined);
    } finally {
      Object.defineProperty(globalThis, 'WebAssembly', saved);
    }
  });
});

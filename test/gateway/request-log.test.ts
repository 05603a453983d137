import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isoTime } from '../../src/gateway/request-log.ts';

describe('the request log', () => {
  it('writes a time exactly as Date.prototype.toISOString does, at every millisecond of a second and across seconds', () => {
    const start = Date.UTC(2026, 10, 26, 19, 2, 49);
    for (let ms = start; ms < start + 2_500; ms++) assert.equal(isoTime(ms), new Date(ms).toISOString());
  });

  it('writes times out of the cached form (fractions, before 1970, past year 9999) as toISOString does', () => {
    for (const ms of [0, 1.5, -1, -86_400_001, 253_402_300_799_999, 253_402_300_800_000, 8.64e15]) {
      assert.equal(isoTime(ms), new Date(ms).toISOString());
    }
  });
});

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createLocalResponsesState, withSealer } from '../../src/responses/state.ts';
import type { ResponsesState } from '../../src/responses/state.ts';
import { createSealer } from '../../src/responses/seal.ts';

const home = mkdtempSync(join(tmpdir(), 'llmux-responses-state-'));
after(() => rmSync(home, { recursive: true, force: true }));

describe('createLocalResponsesState', () => {
  it('has no sealer at hand before the first is made, then the same one every time', async () => {
    const state = createLocalResponsesState({ home, ttlMs: 60_000, maxBytes: 1024 });
    assert.equal(state.sealerNow(), undefined);
    const sealer = await state.sealer();
    assert.equal(state.sealerNow(), sealer);
    assert.equal(await state.sealer(), sealer);
  });
});

describe('withSealer', () => {
  const sealer = createSealer(Buffer.alloc(32, 7));

  it('makes its value at once, not as a promise, when the sealer is at hand', () => {
    const state: ResponsesState = { store: undefined as never, sealer: () => Promise.resolve(sealer), sealerNow: () => sealer };
    const made = withSealer(state, (given) => ({ given }));
    assert.ok(!(made instanceof Promise));
    assert.equal(made.given, sealer);
  });

  it('waits for the sealer when it is not made yet, and passes its failure on', async () => {
    const state: ResponsesState = { store: undefined as never, sealer: () => Promise.resolve(sealer), sealerNow: () => undefined };
    const made = withSealer(state, (given) => ({ given }));
    assert.ok(made instanceof Promise);
    assert.equal((await made).given, sealer);
    const failing: ResponsesState = { store: undefined as never, sealer: () => Promise.reject(new Error('no secret')), sealerNow: () => undefined };
    await assert.rejects(Promise.resolve(withSealer(failing, () => 1)), /no secret/);
  });
});

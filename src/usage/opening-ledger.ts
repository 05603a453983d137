/**
 * A ledger usable at once while the real one opens: the file ledger reads its files back before
 * it answers (and a shared-state one will connect first), but `createGateway` is synchronous and
 * its handler may be mounted before `listen`. Records made meanwhile are kept and handed over
 * when it opens; `spendCached` counts them too, so a budget holds from the first request.
 * `listen` waits for `ready`, so `llmux serve` answers nothing before the ledger is open.
 *
 * When opening fails, `ready` rejects with the reason, records are dropped (the failure is the
 * caller's to report), and queries reject with it.
 */
import { DAY_MS } from './ledger-format.ts';
import type { UsageEntry, UsageLedger } from './ledger.ts';

export interface OpeningLedger extends UsageLedger {
  /** Resolves once the ledger is open; rejects when it could not be opened. */
  readonly ready: Promise<void>;
}

const noop = (): void => {};

export function whenOpen(opening: Promise<UsageLedger>): OpeningLedger {
  let ledger: UsageLedger | undefined;
  let failed: Error | undefined;
  let early: UsageEntry[] = [];

  const ready = opening.then((opened) => {
    ledger = opened;
    for (const entry of early) opened.record(entry);
    early = [];
  }, (err: unknown) => {
    failed = err instanceof Error ? err : new Error(String(err));
    early = [];
    throw failed;
  });
  // Whoever awaits `ready` sees the failure; an unawaited one must not crash the process.
  ready.catch(noop);

  async function open(): Promise<UsageLedger> {
    await ready;
    return ledger as UsageLedger;
  }

  return {
    ready,
    record(entry) {
      if (ledger !== undefined) ledger.record(entry);
      else if (failed === undefined) early.push(entry);
    },
    async query(request) {
      return (await open()).query(request);
    },
    async spend(keyId, sinceMs) {
      return (await open()).spend(keyId, sinceMs);
    },
    spendCached(keyId, sinceMs) {
      if (ledger !== undefined) return ledger.spendCached(keyId, sinceMs);
      const from = Math.floor(sinceMs / DAY_MS) * DAY_MS;
      let usd = 0;
      for (const entry of early) if (entry.keyId === keyId && entry.at >= from && entry.costUsd > 0) usd += entry.costUsd;
      return usd;
    },
    async flush() {
      await ready.catch(noop);
      await ledger?.flush();
    },
    async close() {
      await ready.catch(noop);
      await ledger?.close();
    },
  };
}

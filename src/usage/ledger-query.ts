/**
 * Query grouping for the usage ledger, shared by every implementation (the file ledger, and a
 * shared-state one later): stored rows (UTC hour × key × model) in, the rows of `GET /v1/usage`
 * out. The range, key filter and grouping rules are written down in `ledger.ts`'s header.
 */
import { DAY_MS, HOUR_MS, NANOS_PER_USD } from './ledger-format.ts';
import type { Counts } from './ledger-format.ts';
import type { UsageGrouping, UsageQuery, UsageRow } from './ledger.ts';

export interface UsageSummary {
  /** Adds one stored row; rows outside the query's range or key are ignored. */
  add(hour: number, keyId: string, model: string, counts: Readonly<Counts>): void;
  /** The grouped rows, sorted. */
  rows(): UsageRow[];
}

interface Group {
  start: number;
  end: number;
  keyId: string | null;
  model: string | null;
  counts: Counts;
}

/** Normalizes `groupBy`; throws RangeError for both `hour` and `day` (a caller's mistake, not a client's). */
export function groupings(groupBy: UsageQuery['groupBy']): ReadonlySet<UsageGrouping> {
  const set = new Set<UsageGrouping>(typeof groupBy === 'string' ? [groupBy] : groupBy);
  for (const g of set) if (g !== 'hour' && g !== 'day' && g !== 'model' && g !== 'key') throw new RangeError(`unknown usage grouping ${String(g)}`);
  if (set.has('hour') && set.has('day')) throw new RangeError('group usage by hour or by day, not both');
  return set;
}

/** Grouping of stored rows (hour × key × model) into `UsageRow`s for one query. */
export function createUsageSummary(query: UsageQuery): UsageSummary {
  const by = groupings(query.groupBy);
  const fromHour = Math.floor(query.since / HOUR_MS);
  const toHour = Math.ceil(query.until / HOUR_MS);
  const fromMs = fromHour * HOUR_MS;
  const toMs = toHour * HOUR_MS;
  const onlyKey = query.keyId === undefined || query.keyId === 'all' ? undefined : query.keyId;
  const groups = new Map<string, Group>();

  return {
    add(hour, keyId, model, counts) {
      if (hour < fromHour || hour >= toHour) return;
      if (onlyKey !== undefined && keyId !== onlyKey) return;
      let start = fromMs;
      let end = toMs;
      if (by.has('hour')) {
        start = hour * HOUR_MS;
        end = start + HOUR_MS;
      } else if (by.has('day')) {
        const dayStart = Math.floor(hour / 24) * DAY_MS;
        start = Math.max(dayStart, fromMs);
        end = Math.min(dayStart + DAY_MS, toMs);
      }
      const groupKey = by.has('key') ? keyId : onlyKey ?? null;
      const groupModel = by.has('model') ? model : null;
      const id = `${start}\u0000${groupKey ?? ''}\u0000${groupModel ?? ''}`;
      const group = groups.get(id);
      if (group === undefined) {
        groups.set(id, { start, end, keyId: groupKey, model: groupModel, counts: [counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]] });
        return;
      }
      for (let i = 0; i < 6; i++) group.counts[i] = (group.counts[i] as number) + (counts[i] as number);
    },
    rows() {
      const sorted = [...groups.values()].sort((a, b) => a.start - b.start || compareNullable(a.keyId, b.keyId) || compareNullable(a.model, b.model));
      return sorted.map((g) => ({
        start: new Date(g.start).toISOString(),
        end: new Date(g.end).toISOString(),
        key_id: g.keyId,
        model: g.model,
        requests: g.counts[0],
        input_tokens: g.counts[1],
        output_tokens: g.counts[2],
        cache_read_input_tokens: g.counts[3],
        cache_creation_input_tokens: g.counts[4],
        cost_usd: g.counts[5] / NANOS_PER_USD,
      }));
    },
  };
}

function compareNullable(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a < b ? -1 : 1;
}

/**
 * The query string of `GET /v1/usage` (llmux.md section 7): `since`, `until`, `group_by`, `key`.
 * A bad one is a 400 naming the parameter; who may ask for which key is the route's business.
 *
 * Decisions beyond the spec:
 * - `since` and `until` are ISO 8601: a date (`2026-03-01`, midnight UTC) or a date and time with
 *   `Z` or an offset. Defaults: `until` now, `since` seven days before `until` (as `llmux usage`).
 * - `group_by` also takes a comma-separated list (`day,model`, what the dashboard's chart asks);
 *   `hour` and `day` exclude each other. Default `day`.
 * - Unknown or repeated parameters are refused, so a typo (`groupby`) is not silently ignored.
 */
import { invalidParameters } from '../common/errors.ts';
import type { UsageGrouping } from './ledger.ts';

export interface UsageParams {
  since: number;
  until: number;
  groupBy: UsageGrouping[];
  /** `all`, a key id, or undefined for the caller's own key. */
  key: string | undefined;
}

const DEFAULT_RANGE_MS = 7 * 86_400_000;
const GROUPINGS: readonly UsageGrouping[] = ['day', 'hour', 'model', 'key'];
const KNOWN = new Set(['since', 'until', 'group_by', 'key']);
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;
const KEY_ID = /^key_[0-9a-f]{16}$/;

/** An ISO 8601 date or date-time in ms, or undefined when `text` is not one. */
export function parseIsoTime(text: string): number | undefined {
  if (!ISO_TIME.test(text)) return undefined;
  const ms = Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text);
  return Number.isFinite(ms) ? ms : undefined;
}

/** `day,model` -> ['day', 'model']; throws with `what` naming the source of a bad value. */
export function parseGroupings(text: string, what: string): UsageGrouping[] {
  const groupBy: UsageGrouping[] = [];
  for (const part of text.split(',')) {
    const name = part.trim() as UsageGrouping;
    if (!GROUPINGS.includes(name)) throw invalidParameters(`${what}: "${part.slice(0, 40)}" must be one of day, hour, model, key (or several, comma-separated)`, what);
    if (!groupBy.includes(name)) groupBy.push(name);
  }
  if (groupBy.includes('day') && groupBy.includes('hour')) throw invalidParameters(`${what}: group by day or by hour, not both`, what);
  return groupBy;
}

/** Reads the query string (after `?`, or a whole request URL). */
export function parseUsageParams(url: string, nowMs: number): UsageParams {
  const question = url.indexOf('?');
  const params = new URLSearchParams(question === -1 ? '' : url.slice(question + 1));
  const seen = new Set<string>();
  for (const name of params.keys()) {
    if (!KNOWN.has(name)) throw invalidParameters(`${name.slice(0, 40)}: unknown parameter (since, until, group_by, key)`, name.slice(0, 40));
    if (seen.has(name)) throw invalidParameters(`${name}: given more than once`, name);
    seen.add(name);
  }
  const time = (name: 'since' | 'until', fallback: number): number => {
    const text = params.get(name);
    if (text === null) return fallback;
    const ms = parseIsoTime(text);
    if (ms === undefined) throw invalidParameters(`${name}: "${text.slice(0, 40)}" must be an ISO 8601 date or time, e.g. 2026-03-01 or 2026-03-01T12:00:00Z`, name);
    return ms;
  };
  const until = time('until', nowMs);
  const since = time('since', until - DEFAULT_RANGE_MS);
  if (since >= until) throw invalidParameters('since: must be before until', 'since');
  const key = params.get('key') ?? undefined;
  if (key !== undefined && key !== 'all' && !KEY_ID.test(key)) throw invalidParameters(`key: "${key.slice(0, 40)}" must be a key id (key_ and 16 hex digits) or "all"`, 'key');
  return { since, until, groupBy: parseGroupings(params.get('group_by') ?? 'day', 'group_by'), key };
}

/**
 * Prometheus histograms and counters for `GET /metrics` (llmux.md section 7), rendered in the
 * text exposition format (version 0.0.4): `# HELP`, `# TYPE`, then one line per series, label
 * values escaped (`\\`, `\"`, `\n`), histogram buckets cumulative with `le` ending at `+Inf`,
 * then `_sum` and `_count`.
 *
 * `observe` and `inc` are called once per request. A label set is looked up through one nested
 * map level per label name, so a known label set costs a few map lookups and no string building;
 * the label text of a series is built once, when the series is first seen. `child(labels)` skips
 * even the lookups. Labels must come from configuration and the catalog (never key ids or client
 * input), which bounds the number of series; nothing here caps it.
 *
 * Decisions: series are rendered sorted by their label text, so a scrape is stable; a NaN
 * observation is ignored (it would turn `_sum` into NaN forever); a counter ignores negative or
 * NaN increments (counters only go up).
 */

/** Label values keyed by label name. */
export type Labels<L extends string> = Readonly<Record<L, string>>;

/** Request and first-byte durations of model requests: 10 ms to 10 min. */
export const SECONDS_BUCKETS: readonly number[] = Object.freeze([0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]);

export interface HistogramOptions<L extends string> {
  labelNames: readonly L[];
  /** Upper bounds, ascending and finite (default `SECONDS_BUCKETS`); `+Inf` is always added. */
  buckets?: readonly number[];
}

export interface Histogram<L extends string> {
  observe(labels: Labels<L>, value: number): void;
  /** The series of one label set, to observe without any lookup. */
  child(labels: Labels<L>): { observe(value: number): void };
  /** The text exposition of every series, ending with a newline. */
  render(name: string, help: string): string;
}

export interface CounterOptions<L extends string> {
  labelNames: readonly L[];
}

export interface Counter<L extends string> {
  inc(labels: Labels<L>, by?: number): void;
  child(labels: Labels<L>): { inc(by?: number): void };
  render(name: string, help: string): string;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Escapes a label value: backslash, double quote and line feed. */
export function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** Escapes `# HELP` text: backslash and line feed. */
export function escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, (c) => (c === '\n' ? '\\n' : '\\\\'));
}

/** A sample value or bound as the format writes it: `+Inf`, `-Inf`, `NaN`, else the shortest decimal. */
export function formatValue(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  if (Number.isNaN(value)) return 'NaN';
  return String(value);
}

function checkLabelNames(labelNames: readonly string[], reserved: readonly string[]): void {
  for (const name of labelNames) {
    if (!LABEL_NAME.test(name) || name.startsWith('__') || reserved.includes(name)) throw new RangeError(`invalid label name "${name}"`);
  }
  if (new Set(labelNames).size !== labelNames.length) throw new RangeError('label names repeat');
}

function header(name: string, help: string, type: string): string {
  if (!METRIC_NAME.test(name)) throw new RangeError(`invalid metric name "${name}"`);
  return `# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}\n`;
}

interface SeriesIndex<S> {
  get(labels: Readonly<Record<string, string>>): S;
  /** Every series with its label text (`a="x",b="y"`), sorted by that text. */
  sorted(): Array<{ labelText: string; series: S }>;
}

/** Series by label values: one map level per label name, the label text built once per series. */
function createSeriesIndex<S>(labelNames: readonly string[], make: () => S): SeriesIndex<S> {
  const root = new Map<string, unknown>();
  const all: Array<{ labelText: string; series: S }> = [];
  const last = labelNames.length - 1;

  function create(labels: Readonly<Record<string, string>>): S {
    const series = make();
    const labelText = labelNames.map((name) => `${name}="${escapeLabelValue(String(labels[name]))}"`).join(',');
    all.push({ labelText, series });
    return series;
  }

  let only: S | undefined;
  return {
    get(labels) {
      if (last < 0) return only ??= create(labels);
      let level = root;
      for (let i = 0; i < last; i++) {
        const value = labels[labelNames[i] as string] as string;
        let next = level.get(value) as Map<string, unknown> | undefined;
        if (next === undefined) level.set(value, next = new Map());
        level = next;
      }
      const value = labels[labelNames[last] as string] as string;
      let series = level.get(value) as S | undefined;
      if (series === undefined) level.set(value, series = create(labels));
      return series;
    },
    sorted() {
      return [...all].sort((a, b) => (a.labelText < b.labelText ? -1 : a.labelText > b.labelText ? 1 : 0));
    },
  };
}

function braces(labelText: string, extra?: string): string {
  const inner = extra === undefined ? labelText : labelText === '' ? extra : `${labelText},${extra}`;
  return inner === '' ? '' : `{${inner}}`;
}

interface HistogramSeries {
  /** Observations per bucket, not cumulative; the last slot is the +Inf bucket. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** A histogram with fixed buckets. Throws RangeError for bad label names or buckets. */
export function createHistogram<L extends string>(options: HistogramOptions<L>): Histogram<L> {
  checkLabelNames(options.labelNames, ['le']);
  const buckets = [...(options.buckets ?? SECONDS_BUCKETS)];
  for (let i = 0; i < buckets.length; i++) {
    const bound = buckets[i] as number;
    if (!Number.isFinite(bound) || (i > 0 && bound <= (buckets[i - 1] as number))) throw new RangeError('buckets must be finite and strictly ascending');
  }
  const bounds = buckets.map(formatValue);
  const index = createSeriesIndex<HistogramSeries>(options.labelNames, () => ({ counts: new Float64Array(buckets.length + 1), sum: 0, count: 0 }));

  function observeSeries(series: HistogramSeries, value: number): void {
    if (Number.isNaN(value)) return;
    let slot = 0;
    while (slot < buckets.length && value > (buckets[slot] as number)) slot++;
    series.counts[slot] = (series.counts[slot] as number) + 1;
    series.sum += value;
    series.count++;
  }

  return {
    observe(labels, value) {
      observeSeries(index.get(labels), value);
    },
    child(labels) {
      const series = index.get(labels);
      return { observe: (value) => observeSeries(series, value) };
    },
    render(name, help) {
      let out = header(name, help, 'histogram');
      for (const { labelText, series } of index.sorted()) {
        let cumulative = 0;
        for (let i = 0; i < bounds.length; i++) {
          cumulative += series.counts[i] as number;
          out += `${name}_bucket${braces(labelText, `le="${bounds[i] as string}"`)} ${cumulative}\n`;
        }
        out += `${name}_bucket${braces(labelText, 'le="+Inf"')} ${series.count}\n`;
        out += `${name}_sum${braces(labelText)} ${formatValue(series.sum)}\n`;
        out += `${name}_count${braces(labelText)} ${series.count}\n`;
      }
      return out;
    },
  };
}

/** A counter with labels. Throws RangeError for bad label names. */
export function createCounter<L extends string>(options: CounterOptions<L>): Counter<L> {
  checkLabelNames(options.labelNames, []);
  const index = createSeriesIndex<{ value: number }>(options.labelNames, () => ({ value: 0 }));

  function add(series: { value: number }, by: number): void {
    if (by >= 0) series.value += by;
  }

  return {
    inc(labels, by = 1) {
      add(index.get(labels), by);
    },
    child(labels) {
      const series = index.get(labels);
      return { inc: (by = 1) => add(series, by) };
    },
    render(name, help) {
      let out = header(name, help, 'counter');
      for (const { labelText, series } of index.sorted()) out += `${name}${braces(labelText)} ${formatValue(series.value)}\n`;
      return out;
    },
  };
}

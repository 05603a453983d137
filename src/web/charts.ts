/**
 * Server-side SVG charts for the dashboard's usage view (llmux.md section 7): cost or tokens per
 * day for the last 30 days stacked by model, and the top keys by cost. Strings only, no script, no
 * `style` attribute or element (the pages' Content-Security-Policy allows neither): presentation
 * attributes only, and `currentColor` for text and lines so the page's light or dark colours apply.
 *
 * Readable at phone width: the SVG has a `viewBox` and `width="100%"`, so it scales with its
 * container; the viewBox is narrow (480 units) and text is 16-18 units, 11 CSS px or more in a
 * 390 px wide phone's card. On a wide screen the container should cap the chart's width
 * (`CHART_CSS`, for the dashboard's stylesheet), or text grows with it. The x axis labels every
 * seventh day, ending on the last one; the legend is laid out in rows under the plot, wrapping
 * at the chart's width; long names are shortened with "…" and given in full in a tooltip.
 *
 * Every text (model ids and key names come from config and users) is escaped. Each chart is
 * `role="img"` with an `aria-label` and a `<title>`/`<desc>` summing it up. A model's colour
 * comes from a hash of its id into a fixed palette; two models that hash to the same colour are
 * separated by taking the next free one in alphabetical order of ids. The page assigns colours
 * once, over every model it shows, and hands the same map to each chart (`colours`): assigned
 * per chart, a model missing from one chart (a free model has tokens but no cost) moved the others.
 * Key bars are drawn in a neutral colour, so no key is taken for a model.
 *
 * Amounts of money are written as the rest of the dashboard writes them (`formatUsd`: cents from
 * $1 up, four decimals below), in bar values, legends, tooltips and summaries; axis ticks are
 * round marks of the scale and carry only the decimals their step needs.
 */
import type { UsageRow } from '../usage/ledger.ts';
import { formatUsd } from '../usage/budget.ts';

export type ChartUnit = 'usd' | 'tokens';

export interface DaySegment {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  model: string;
  value: number;
}

export interface StackedBarChartOptions {
  /** The x axis, oldest first, `YYYY-MM-DD` (see `lastDays`). Segments of other days are ignored. */
  days: readonly string[];
  segments: readonly DaySegment[];
  unit: ChartUnit;
  /** The chart's accessible name, e.g. "Cost per day, last 30 days". */
  title: string;
  /** Each model's colour, the same in every chart of the page (`modelColours` over all of them); default: assigned over this chart's models. */
  colours?: ReadonlyMap<string, string>;
}

export interface Bar {
  label: string;
  value: number;
}

export interface HorizontalBarChartOptions {
  bars: readonly Bar[];
  unit: ChartUnit;
  title: string;
  /** Caption under the bars, naming what is measured, e.g. "Cost (USD), last 30 days". */
  axisLabel: string;
  /** Bars shown, largest first (default 10); the rest are summed in one line. */
  limit?: number;
}

/** For the dashboard's stylesheet: charts fill their card on a phone and stop growing on a desktop. */
export const CHART_CSS = '.chart svg { display: block; width: 100%; height: auto; max-width: 36rem; }';

const WIDTH = 480;
const FONT = 18;
const SMALL = 16;
/** Average advance of a character, in em, for estimating text widths (generous for digits). */
const CHAR_EM = 0.6;
const FONT_FAMILY = 'system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif';
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * Ten hues, none pale, after Okabe and Ito's palette for colour-blind readers (its yellow darkened,
 * its black dropped for the dark theme, four more added): each stands out from a white card and
 * from the dark theme's card, and any two differ in hue or clearly in lightness.
 */
const PALETTE = ['#0072b2', '#e69f00', '#009e73', '#d55e00', '#cc79a7', '#56b4e9', '#8e5bb5', '#8a6d3b', '#5f7388', '#b8a000'];

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for SVG content and quoted attribute values. */
export function escapeXml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => XML_ESCAPES[c] as string);
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** A colour per model: the hashed palette slot, or the next free one when another model holds it. */
export function modelColours(models: Iterable<string>): Map<string, string> {
  const colours = new Map<string, string>();
  const taken = new Set<number>();
  for (const model of [...new Set(models)].sort()) {
    const preferred = fnv1a(model) % PALETTE.length;
    let slot = preferred;
    while (taken.has(slot) && taken.size < PALETTE.length) slot = (slot + 1) % PALETTE.length;
    if (taken.has(slot)) {
      // More models than palette colours: a hue from the hash, still deterministic.
      colours.set(model, `hsl(${fnv1a(`${model}#`) % 360} 55% 55%)`);
      continue;
    }
    taken.add(slot);
    colours.set(model, PALETTE[slot] as string);
  }
  return colours;
}

/**
 * Round tick values from 0 to at least `max`: steps of 1, 2, 2.5 or 5 times a power of ten, about
 * `target` of them. `[0, 1]` when `max` is not positive.
 */
export function niceTicks(max: number, target = 4): number[] {
  if (!(max > 0) || !Number.isFinite(max)) return [0, 1];
  const rough = max / target;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = ([1, 2, 2.5, 5, 10].find((m) => m * power >= rough) ?? 10) * power;
  const ticks: number[] = [];
  for (let i = 0; ; i++) {
    // Multiply rather than add, so 0.1 steps do not drift into 0.30000000000000004.
    const tick = Number((i * step).toPrecision(12));
    ticks.push(tick);
    if (tick >= max) return ticks;
  }
}

function decimalsOf(step: number): number {
  let d = 0;
  while (d < 8 && Math.abs(Math.round(step * 10 ** d) - step * 10 ** d) > 1e-9) d++;
  return d;
}

function compact(value: number, decimals: number): string {
  const units: Array<[number, string]> = [[1e9, 'B'], [1e6, 'M'], [1e3, 'k']];
  for (const [size, suffix] of units) {
    if (Math.abs(value) >= size) {
      const scaled = value / size;
      return `${Number(scaled.toFixed(scaled < 10 ? 1 : 0)).toString()}${suffix}`;
    }
  }
  return value.toFixed(decimals);
}

/** An axis tick: `$0`, `$0.25`, `$1,500`, `$15k`; tokens `0`, `500`, `1.5k`, `2M`. */
export function formatTick(value: number, unit: ChartUnit, step: number): string {
  const decimals = decimalsOf(step);
  if (unit === 'tokens') return compact(value, 0);
  if (value >= 10_000) return `$${compact(value, 0)}`;
  return `$${value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals })}`;
}

/** A value in full: `$1,234.56`, `$0.0123`; tokens `1,234,567`. */
export function formatAmount(value: number, unit: ChartUnit): string {
  return unit === 'tokens' ? Math.round(value).toLocaleString('en-US') : formatUsd(value);
}

/** A value on a bar, short: `$1,234.56`, `$0.0123`; tokens `1.2M`. */
function formatBarValue(value: number, unit: ChartUnit): string {
  return unit === 'tokens' ? compact(value, 0) : formatAmount(value, unit);
}

/** `Mar 14` from `2026-03-14`. */
function shortDay(day: string): string {
  const month = MONTHS[Number(day.slice(5, 7)) - 1] ?? day.slice(5, 7);
  return `${month} ${Number(day.slice(8, 10))}`;
}

function textWidth(text: string, size: number): number {
  return text.length * size * CHAR_EM;
}

/** Shortens `text` with "…" to fit `width` at `size`. */
function fit(text: string, width: number, size: number): string {
  const max = Math.max(1, Math.floor(width / (size * CHAR_EM)));
  return text.length <= max ? text : `${text.slice(0, Math.max(1, max - 1))}…`;
}

const round = (n: number): string => String(Math.round(n * 10) / 10);

function svgOpen(height: number, title: string, summary: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${round(height)}" width="100%" role="img" aria-label="${escapeXml(`${title}: ${summary}`)}" `
    + `font-family="${FONT_FAMILY}" font-size="${FONT}" fill="currentColor">`
    + `<title>${escapeXml(title)}</title><desc>${escapeXml(summary)}</desc>`;
}

function emptyChart(title: string): string {
  return `${svgOpen(160, title, 'no usage yet')}`
    + `<rect x="1" y="1" width="${WIDTH - 2}" height="158" rx="8" fill="none" stroke="currentColor" stroke-opacity="0.25" stroke-dasharray="6 6"/>`
    + `<text x="${WIDTH / 2}" y="72" text-anchor="middle" font-size="${FONT + 2}" font-weight="600">No usage yet</text>`
    + `<text x="${WIDTH / 2}" y="104" text-anchor="middle" font-size="${SMALL}" fill-opacity="0.7">Requests appear here once keys use models.</text>`
    + '</svg>';
}

/** The UTC days ending with the day of `endMs`, oldest first: the x axis of `stackedBarChart`. */
export function lastDays(endMs: number, count = 30): string[] {
  const lastDay = Math.floor(endMs / 86_400_000);
  const days: string[] = [];
  for (let d = lastDay - count + 1; d <= lastDay; d++) days.push(new Date(d * 86_400_000).toISOString().slice(0, 10));
  return days;
}

/** Ledger rows grouped by `['day', 'model']` as chart segments: cost, or all four token counts. */
export function usageSegments(rows: readonly UsageRow[], unit: ChartUnit): DaySegment[] {
  return rows.map((row) => ({
    day: row.start.slice(0, 10),
    model: row.model ?? 'all models',
    value: unit === 'usd' ? row.cost_usd : row.input_tokens + row.output_tokens + row.cache_read_input_tokens + row.cache_creation_input_tokens,
  }));
}

/**
 * A stacked bar chart: one bar per day, one segment per model (largest model at the bottom), y
 * axis with round ticks, axis titles, and a legend under the plot. "No usage yet" when every
 * value is 0.
 */
export function stackedBarChart(options: StackedBarChartOptions): string {
  const { days, unit, title } = options;
  const dayIndex = new Map(days.map((d, i) => [d, i]));
  // values[day][model]
  const values: Array<Map<string, number>> = days.map(() => new Map());
  const modelTotals = new Map<string, number>();
  for (const s of options.segments) {
    const i = dayIndex.get(s.day);
    if (i === undefined || !(s.value > 0) || !Number.isFinite(s.value)) continue;
    const day = values[i] as Map<string, number>;
    day.set(s.model, (day.get(s.model) ?? 0) + s.value);
    modelTotals.set(s.model, (modelTotals.get(s.model) ?? 0) + s.value);
  }
  if (modelTotals.size === 0) return emptyChart(title);

  const models = [...modelTotals.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([m]) => m);
  const own = options.colours === undefined ? modelColours(models) : undefined;
  const colourOf = (model: string): string => options.colours?.get(model) ?? (own ?? modelColours([model])).get(model) as string;
  const dayTotals = values.map((day) => [...day.values()].reduce((a, b) => a + b, 0));
  const ticks = niceTicks(Math.max(...dayTotals));
  const step = ticks[1] as number;
  const yMax = ticks[ticks.length - 1] as number;
  const tickLabels = ticks.map((t) => formatTick(t, unit, step));

  const left = Math.max(...tickLabels.map((l) => textWidth(l, SMALL))) + 12;
  const right = WIDTH - 8;
  const top = 34;
  const plotHeight = 210;
  const bottom = top + plotHeight;
  const slot = (right - left) / days.length;
  const barWidth = Math.max(1, slot * 0.72);
  const y = (v: number) => bottom - (v / yMax) * plotHeight;

  let out = '';
  // Y axis: title above, grid lines and tick labels.
  out += `<text x="0" y="${top - 16}" font-size="${SMALL}" font-weight="600">${unit === 'usd' ? 'Cost (USD)' : 'Tokens'}</text>`;
  ticks.forEach((t, i) => {
    const ty = y(t);
    out += `<line x1="${round(left)}" x2="${right}" y1="${round(ty)}" y2="${round(ty)}" stroke="currentColor" stroke-opacity="${t === 0 ? 0.6 : 0.15}"/>`;
    out += `<text x="${round(left - 8)}" y="${round(ty + SMALL * 0.35)}" text-anchor="end" font-size="${SMALL}">${escapeXml(tickLabels[i] as string)}</text>`;
  });

  // Bars: one rect per non-zero segment, each with a tooltip.
  days.forEach((day, i) => {
    const x = left + i * slot + (slot - barWidth) / 2;
    let base = 0;
    const dayValues = values[i] as Map<string, number>;
    for (const model of models) {
      const v = dayValues.get(model);
      if (v === undefined) continue;
      const y0 = y(base);
      const y1 = y(base + v);
      base += v;
      out += `<rect x="${round(x)}" y="${round(y1)}" width="${round(barWidth)}" height="${round(Math.max(0.5, y0 - y1))}" fill="${colourOf(model)}">`
        + `<title>${escapeXml(`${day} · ${model}: ${formatAmount(v, unit)}`)}</title></rect>`;
    }
  });

  // X axis: every seventh day, ending with the last, kept inside the chart.
  for (let i = days.length - 1; i >= 0; i -= 7) {
    const label = shortDay(days[i] as string);
    const half = textWidth(label, SMALL) / 2;
    const cx = Math.min(Math.max(left + (i + 0.5) * slot, left + half), WIDTH - half);
    out += `<line x1="${round(left + (i + 0.5) * slot)}" x2="${round(left + (i + 0.5) * slot)}" y1="${bottom}" y2="${bottom + 5}" stroke="currentColor" stroke-opacity="0.6"/>`;
    out += `<text x="${round(cx)}" y="${bottom + 24}" text-anchor="middle" font-size="${SMALL}">${escapeXml(label)}</text>`;
  }
  out += `<text x="${round((left + right) / 2)}" y="${bottom + 50}" text-anchor="middle" font-size="${SMALL}" font-weight="600">Day (UTC)</text>`;

  // Legend: rows under the plot, wrapping at the chart's width.
  const legendTop = bottom + 70;
  const rowHeight = 28;
  const swatch = 14;
  let lx = 0;
  let row = 0;
  for (const model of models) {
    const label = fit(model, WIDTH - swatch - 8, SMALL);
    const itemWidth = swatch + 8 + textWidth(label, SMALL) + 18;
    if (lx > 0 && lx + itemWidth - 18 > WIDTH) {
      lx = 0;
      row++;
    }
    const ly = legendTop + row * rowHeight;
    out += `<g><title>${escapeXml(`${model}: ${formatAmount(modelTotals.get(model) as number, unit)}`)}</title>`
      + `<rect x="${round(lx)}" y="${ly}" width="${swatch}" height="${swatch}" rx="3" fill="${colourOf(model)}"/>`
      + `<text x="${round(lx + swatch + 8)}" y="${ly + swatch - 1}" font-size="${SMALL}">${escapeXml(label)}</text></g>`;
    lx += itemWidth;
  }
  const height = legendTop + (row + 1) * rowHeight;

  const total = [...modelTotals.values()].reduce((a, b) => a + b, 0);
  const first = days[0] as string;
  const last = days[days.length - 1] as string;
  const top1 = models[0] as string;
  const summary = `${formatAmount(total, unit)} in total from ${first} to ${last}, `
    + `${models.length === 1 ? 'all' : 'most'} on ${top1} (${formatAmount(modelTotals.get(top1) as number, unit)}); `
    + `busiest day ${days[dayTotals.indexOf(Math.max(...dayTotals))] as string} with ${formatAmount(Math.max(...dayTotals), unit)}`;
  return `${svgOpen(height, title, summary)}${out}</svg>`;
}

/**
 * A horizontal bar chart, largest first: each row is the label (left) and value (right) on one
 * line with its bar under it, so long names keep the whole width on a phone. "No usage yet"
 * when every value is 0.
 */
export function horizontalBarChart(options: HorizontalBarChartOptions): string {
  const { unit, title } = options;
  const limit = Math.max(1, Math.floor(options.limit ?? 10));
  const bars = options.bars.filter((b) => b.value > 0 && Number.isFinite(b.value)).sort((a, b) => b.value - a.value || (a.label < b.label ? -1 : 1));
  if (bars.length === 0) return emptyChart(title);
  const shown = bars.slice(0, limit);
  const rest = bars.slice(limit);
  const max = (shown[0] as Bar).value;

  const rowHeight = 56;
  const barHeight = 16;
  let out = '';
  shown.forEach((bar, i) => {
    const top = i * rowHeight;
    const value = formatBarValue(bar.value, unit);
    const label = fit(bar.label, WIDTH - textWidth(value, FONT) - 16, FONT);
    const width = Math.max(2, (bar.value / max) * WIDTH);
    out += `<g><title>${escapeXml(`${bar.label}: ${formatAmount(bar.value, unit)}`)}</title>`
      + `<text x="0" y="${top + FONT}">${escapeXml(label)}</text>`
      + `<text x="${WIDTH}" y="${top + FONT}" text-anchor="end" font-weight="600">${escapeXml(value)}</text>`
      + `<rect x="0" y="${top + FONT + 8}" width="${WIDTH}" height="${barHeight}" rx="4" fill="currentColor" fill-opacity="0.08"/>`
      + `<rect x="0" y="${top + FONT + 8}" width="${round(width)}" height="${barHeight}" rx="4" fill="currentColor" fill-opacity="0.75"/></g>`;
  });
  let y = shown.length * rowHeight;
  if (rest.length > 0) {
    const restTotal = rest.reduce((sum, b) => sum + b.value, 0);
    out += `<text x="0" y="${y + SMALL}" font-size="${SMALL}" fill-opacity="0.75">${escapeXml(`and ${rest.length} more: ${formatAmount(restTotal, unit)}`)}</text>`;
    y += SMALL + 16;
  }
  out += `<line x1="0" x2="${WIDTH}" y1="${y + 4}" y2="${y + 4}" stroke="currentColor" stroke-opacity="0.3"/>`;
  out += `<text x="0" y="${y + 4 + SMALL + 10}" font-size="${SMALL}" font-weight="600">${escapeXml(options.axisLabel)}</text>`;
  const height = y + 4 + SMALL + 18;

  const top1 = shown[0] as Bar;
  const summary = `${bars.length} ${bars.length === 1 ? 'entry' : 'entries'}; largest ${top1.label} with ${formatAmount(top1.value, unit)}`;
  return `${svgOpen(height, title, summary)}${out}</svg>`;
}

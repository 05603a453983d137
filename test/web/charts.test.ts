import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import {
  CHART_CSS, escapeXml, formatAmount, formatTick, horizontalBarChart, lastDays, modelColours, niceTicks, stackedBarChart, usageSegments,
} from '../../src/web/charts.ts';
import type { DaySegment } from '../../src/web/charts.ts';
import { STYLESHEET } from '../../src/web/html.ts';
import { browserSkip, launchChromium } from '../helpers/cdp.ts';

const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
const END = Date.UTC(2026, 2, 14, 15);
const DAYS = lastDays(END, 30);

function count(svg: string, pattern: RegExp): number {
  return (svg.match(pattern) ?? []).length;
}

/** Texts of the `<text>` elements, unescaped enough to compare. */
function texts(svg: string): string[] {
  return [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1] as string);
}

/** Deterministic sample usage: five models over 30 days, some days idle. */
function sampleSegments(): DaySegment[] {
  const models = ['claude-sonnet-4-5', 'gpt-4.1-mini', 'qwen-local', 'claude-haiku-4-5-20251001-batch-evaluation-run', '<script>alert("x")</script> & co'];
  let seed = 7;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const segments: DaySegment[] = [];
  DAYS.forEach((day, i) => {
    if (i % 9 === 4) return; // an idle day
    models.forEach((model, m) => {
      if (random() < 0.25) return;
      segments.push({ day, model, value: Math.round(random() * (m === 0 ? 12 : 4) * 100) / 100 });
    });
  });
  return segments;
}

const KEYS = [
  ['ci-pipeline-production', 182.4], ['alice laptop', 96.12], ['Tom & "Jerry" <ops>', 64.5], ['batch-eval-nightly-long-running-key-name-that-goes-on', 41.07],
  ['bob', 22.9], ['staging', 12.31], ['device: Zed editor on laptop', 8.5], ['carol', 3.2], ['dave', 1.05], ['erin', 0.42], ['frank', 0.05], ['grace', 0.0123],
].map(([label, value]) => ({ label: label as string, value: value as number }));

describe('stacked bar chart', () => {
  it('draws one rect per non-zero segment, in a labelled, accessible SVG without script or style', () => {
    const segments: DaySegment[] = [
      { day: DAYS[29] as string, model: 'a', value: 2 },
      { day: DAYS[29] as string, model: 'b', value: 1 },
      { day: DAYS[28] as string, model: 'a', value: 0 },
      { day: DAYS[0] as string, model: 'b', value: 0.5 },
      { day: '2020-01-01', model: 'a', value: 99 }, // not on the axis
    ];
    const svg = stackedBarChart({ days: DAYS, segments, unit: 'usd', title: 'Cost per day, last 30 days' });
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" viewBox="0 0 480 \d+(\.\d)?" width="100%" role="img" aria-label="Cost per day, last 30 days: [^"]+"/);
    assert.match(svg, /<title>Cost per day, last 30 days<\/title><desc>\$3\.50 in total from 2026-02-13 to 2026-03-14, most on a \(\$2\.00\); busiest day 2026-03-14 with \$3\.00<\/desc>/);
    const segmentRects = [...svg.matchAll(/<rect [^>]*><title>([^<]*)<\/title><\/rect>/g)].map((m) => m[1]);
    assert.deepEqual(segmentRects, ['2026-02-13 · b: $0.5000', '2026-03-14 · a: $2.00', '2026-03-14 · b: $1.00']);
    assert.ok(texts(svg).includes('Cost (USD)'), 'y axis title');
    assert.ok(texts(svg).includes('Day (UTC)'), 'x axis title');
    assert.deepEqual(texts(svg).filter((t) => t.startsWith('$')), ['$0', '$1', '$2', '$3'], 'round y ticks');
    assert.deepEqual(texts(svg).filter((t) => /^(Feb|Mar) \d+$/.test(t)), ['Mar 14', 'Mar 7', 'Feb 28', 'Feb 21', 'Feb 14'], 'every seventh day, ending on the last');
    assert.deepEqual(texts(svg).slice(-2), ['a', 'b'], 'legend, largest model first');
    assert.doesNotMatch(svg, /<script|style=|<style|on[a-z]+=/i);
  });

  it('stacks the largest model at the bottom of every bar, and each model keeps one colour', () => {
    const svg = stackedBarChart({
      days: DAYS,
      segments: [
        { day: DAYS[29] as string, model: 'small', value: 1 }, { day: DAYS[29] as string, model: 'big', value: 3 },
        { day: DAYS[28] as string, model: 'small', value: 2 }, { day: DAYS[28] as string, model: 'big', value: 2 },
      ],
      unit: 'usd',
      title: 't',
    });
    const rects = [...svg.matchAll(/<rect x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)" fill="([^"]+)"><title>([^<]*)</g)].map((m) => ({ y: Number(m[1]), h: Number(m[2]), fill: m[3], title: m[4] as string }));
    const colours = modelColours(['big', 'small']);
    for (const r of rects) assert.equal(r.fill, colours.get(r.title.includes('big') ? 'big' : 'small'));
    const [bigOld, smallOld] = rects;
    assert.ok(bigOld !== undefined && smallOld !== undefined);
    assert.ok(bigOld.title.includes('big') && smallOld.title.includes('small'));
    assert.ok(bigOld.y > smallOld.y, 'big is drawn below small');
    assert.ok(Math.abs(bigOld.y - (smallOld.y + smallOld.h)) < 0.2, 'segments touch');
  });

  it('escapes model ids everywhere they appear', () => {
    const model = '<script>alert("x")</script> & \'co\'';
    const svg = stackedBarChart({ days: DAYS, segments: [{ day: DAYS[29] as string, model, value: 1 }], unit: 'tokens', title: 'Tokens <per> day & "more"' });
    assert.doesNotMatch(svg, /<script/);
    assert.match(svg, /&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt; &amp; &#39;co&#39;/);
    assert.match(svg, /aria-label="Tokens &lt;per&gt; day &amp; &quot;more&quot;: /);
    assert.equal(count(svg, /<title>/g), 3, 'the chart, the segment and the legend item');
  });

  it('renders a clear "No usage yet" when there is nothing to draw', () => {
    for (const segments of [[], [{ day: DAYS[3] as string, model: 'a', value: 0 }]]) {
      const svg = stackedBarChart({ days: DAYS, segments, unit: 'usd', title: 'Cost per day' });
      assert.ok(texts(svg).includes('No usage yet'));
      assert.match(svg, /role="img" aria-label="Cost per day: no usage yet"/);
      assert.equal(count(svg, /<rect /g), 1, 'only the frame');
    }
  });

  it('wraps the legend into rows and shortens names too long for one', () => {
    const models = ['alpha-model-one', 'beta-model-two', 'gamma-model-three', 'delta-model-four', 'epsilon-model-five', `very-long-${'x'.repeat(80)}`];
    const svg = stackedBarChart({ days: DAYS, segments: models.map((model, i) => ({ day: DAYS[29] as string, model, value: i + 1 })), unit: 'usd', title: 't' });
    const legendYs = new Set([...svg.matchAll(/<g><title>[^<]*<\/title><rect x="[^"]+" y="([^"]+)"/g)].map((m) => m[1]));
    assert.ok(legendYs.size >= 2, `legend rows: ${legendYs.size}`);
    const long = texts(svg).find((t) => t.startsWith('very-long-'));
    assert.ok(long?.endsWith('…'), long);
    assert.match(svg, new RegExp(`<title>very-long-${'x'.repeat(80)}: \\$6\\.00</title>`), 'the full name is in the tooltip');
    for (const m of svg.matchAll(/<g><title>[^<]*<\/title><rect x="([^"]+)"[^>]*\/><text x="[^"]+" y="[^"]+" font-size="16">([^<]*)</g)) {
      assert.ok(Number(m[1]) + 22 + (m[2] as string).length * 16 * 0.6 <= 480 + 0.5, `legend item "${m[2]}" stays inside`);
    }
  });
});

describe('horizontal bar chart', () => {
  it('shows the top keys largest first with their values, sums the rest, and names the axis', () => {
    const svg = horizontalBarChart({ bars: KEYS, unit: 'usd', title: 'Top keys by cost', axisLabel: 'Cost (USD), last 30 days', limit: 10 });
    const t = texts(svg);
    assert.equal(t[0], 'ci-pipeline-production');
    assert.equal(t[1], '$182.40');
    assert.ok(t.includes('Tom &amp; &quot;Jerry&quot; &lt;ops&gt;'));
    assert.ok(t.includes('$0.4200'));
    assert.ok(t.includes('and 2 more: $0.0623'));
    assert.equal(t[t.length - 1], 'Cost (USD), last 30 days');
    assert.equal(count(svg, /fill="currentColor" fill-opacity="0.75"/g), 10, 'one bar per shown key, in no model\'s colour');
    assert.equal(count(svg, /fill="#/g), 0);
    const widths = [...svg.matchAll(/<rect x="0" y="[^"]+" width="([^"]+)" height="16" rx="4" fill="currentColor" fill-opacity="0.75"/g)].map((m) => Number(m[1]));
    assert.equal(widths[0], 480, 'the largest fills the width');
    assert.ok(Math.abs((widths[1] as number) - (96.12 / 182.4) * 480) < 0.1, 'others in proportion');
    assert.doesNotMatch(svg, /<script|style=|<style/i);
    assert.match(svg, /aria-label="Top keys by cost: 12 entries; largest ci-pipeline-production with \$182\.40"/);
  });

  it('shortens a long key name to fit beside its value, keeping it whole in the tooltip', () => {
    const label = `key-${'y'.repeat(100)}`;
    const svg = horizontalBarChart({ bars: [{ label, value: 5 }], unit: 'tokens', title: 't', axisLabel: 'Tokens' });
    assert.ok(texts(svg)[0]?.endsWith('…'));
    assert.match(svg, new RegExp(`<title>${label}: 5</title>`));
  });

  it('renders "No usage yet" for no keys or only zero values', () => {
    for (const bars of [[], [{ label: 'idle', value: 0 }]]) {
      assert.ok(texts(horizontalBarChart({ bars, unit: 'usd', title: 'Top keys', axisLabel: 'Cost' })).includes('No usage yet'));
    }
  });
});

describe('chart helpers', () => {
  it('picks round ticks of 1, 2, 2.5 or 5 times a power of ten, up to the maximum', () => {
    assert.deepEqual(niceTicks(3), [0, 1, 2, 3]);
    assert.deepEqual(niceTicks(3.2), [0, 1, 2, 3, 4]);
    assert.deepEqual(niceTicks(0.7), [0, 0.2, 0.4, 0.6, 0.8]);
    assert.deepEqual(niceTicks(9), [0, 2.5, 5, 7.5, 10]);
    assert.deepEqual(niceTicks(1234), [0, 500, 1000, 1500]);
    assert.deepEqual(niceTicks(0.0031), [0, 0.001, 0.002, 0.003, 0.004]);
    assert.deepEqual(niceTicks(0), [0, 1]);
  });

  it('formats ticks and amounts for money and tokens', () => {
    assert.equal(formatTick(0.25, 'usd', 0.25), '$0.25');
    assert.equal(formatTick(1500, 'usd', 500), '$1,500');
    assert.equal(formatTick(15_000, 'usd', 5000), '$15k');
    assert.equal(formatTick(7.5, 'usd', 2.5), '$7.5');
    assert.equal(formatTick(1_500_000, 'tokens', 500_000), '1.5M');
    assert.equal(formatTick(250, 'tokens', 50), '250');
    assert.equal(formatAmount(0.0123, 'usd'), '$0.0123');
    assert.equal(formatAmount(1234.5, 'usd'), '$1,234.50');
    assert.equal(formatAmount(1234567, 'tokens'), '1,234,567');
  });

  it('gives each model the same colour every time, and different models of one chart different colours', () => {
    const a = modelColours(['m1', 'm2', 'm3']);
    const b = modelColours(['m3', 'm1', 'm2', 'm1']);
    assert.deepEqual([...a.entries()].sort(), [...b.entries()].sort());
    const many = modelColours(Array.from({ length: 10 }, (_, i) => `model-${i}`));
    assert.equal(new Set(many.values()).size, 10, 'the whole palette before any repeat');
    const more = modelColours(Array.from({ length: 13 }, (_, i) => `model-${i}`));
    assert.equal(more.size, 13);
    assert.equal([...more.values()].filter((c) => c.startsWith('hsl(')).length, 3, 'past the palette, hues from the hash');
  });

  it('lists the last days in UTC, oldest first, and turns ledger rows into segments', () => {
    assert.deepEqual(lastDays(Date.UTC(2026, 2, 1, 23, 59), 3), ['2026-02-27', '2026-02-28', '2026-03-01']);
    const row = { start: '2026-03-01T00:00:00.000Z', end: '2026-03-02T00:00:00.000Z', key_id: null, model: 'm', requests: 3, input_tokens: 1, output_tokens: 2, cache_read_input_tokens: 3, cache_creation_input_tokens: 4, cost_usd: 0.5 };
    assert.deepEqual(usageSegments([row], 'usd'), [{ day: '2026-03-01', model: 'm', value: 0.5 }]);
    assert.deepEqual(usageSegments([row], 'tokens'), [{ day: '2026-03-01', model: 'm', value: 10 }]);
    assert.equal(escapeXml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

describe('charts in a browser', () => {
  function samplePage(): string {
    const segments = sampleSegments();
    const tokens = segments.map((s) => ({ ...s, value: Math.round(s.value * 180_000) }));
    const card = (heading: string, svg: string) => `<div class="card chart"><h2>${heading}</h2>${svg}</div>`;
    return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Usage · llmux</title><style>${STYLESHEET}\n${CHART_CSS}\n.card h2 { margin-top: 0; }</style></head>
<body><header class="top"><a class="brand" href="#">llmux</a><nav><a href="#">Dashboard</a></nav></header><main><h1>Usage</h1>
${card('Cost per day', stackedBarChart({ days: DAYS, segments, unit: 'usd', title: 'Cost per day, last 30 days' }))}
${card('Tokens per day', stackedBarChart({ days: DAYS, segments: tokens, unit: 'tokens', title: 'Tokens per day, last 30 days' }))}
${card('Top keys by cost', horizontalBarChart({ bars: KEYS, unit: 'usd', title: 'Top keys by cost, last 30 days', axisLabel: 'Cost (USD), last 30 days' }))}
${card('Before any usage', stackedBarChart({ days: DAYS, segments: [], unit: 'usd', title: 'Cost per day' }))}
</main></body></html>`;
  }

  for (const viewport of [
    { label: 'desktop', width: 1280, height: 900, mobile: false, deviceScaleFactor: 1 },
    { label: 'phone', width: 390, height: 844, mobile: true, deviceScaleFactor: 2 },
  ]) {
    it(`on ${viewport.label}: renders the sample page without sideways scrolling, with text large enough to read`, { skip: browserSkip(), timeout: 60_000 }, async () => {
      mkdirSync(ARTIFACTS, { recursive: true });
      const pagePath = join(ARTIFACTS, 'charts-sample.html');
      writeFileSync(pagePath, samplePage());
      const browser = await launchChromium();
      try {
        const page = await browser.newPage(viewport);
        await page.goto(pathToFileURL(pagePath).href);
        await page.screenshot(join(ARTIFACTS, `charts-${viewport.label}.png`));
        assert.ok(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth'), 'the page scrolls sideways');
        // The smallest chart font, in CSS pixels as drawn: its size in viewBox units times the scale.
        const smallest = await page.evaluate<number>(`Math.min(...[...document.querySelectorAll('svg[role=img]')].flatMap((svg) => {
          const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
          return [...svg.querySelectorAll('text')].map((t) => parseFloat(t.getAttribute('font-size') ?? svg.getAttribute('font-size')) * scale);
        }))`);
        assert.ok(smallest >= 11, `smallest chart text is ${smallest} px`);
        if (viewport.label === 'desktop') assert.ok(smallest <= 20, `desktop chart text is ${smallest} px: the chart is not capped`);
        const charts = await page.evaluate<number>(`document.querySelectorAll('svg[role="img"][aria-label]').length`);
        assert.equal(charts, 4);
        assert.deepEqual(page.problems, []);
      } finally {
        await browser.close();
      }
    });
  }
});

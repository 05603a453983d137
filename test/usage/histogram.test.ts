import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SECONDS_BUCKETS, createCounter, createHistogram, escapeHelp, escapeLabelValue, formatValue } from '../../src/usage/histogram.ts';

describe('histogram', () => {
  it('renders cumulative buckets up to +Inf, then _sum and _count, line by line', () => {
    const h = createHistogram({ labelNames: ['route', 'provider'], buckets: [0.1, 0.5, 1] });
    for (const v of [0.05, 0.1, 0.3, 0.7, 2]) h.observe({ route: '/v1/messages', provider: 'anthropic' }, v);
    h.observe({ route: '/v1/chat/completions', provider: 'local' }, 0.5);
    assert.deepEqual(h.render('llmux_request_duration_seconds', 'Time from request to the last byte.').split('\n'), [
      '# HELP llmux_request_duration_seconds Time from request to the last byte.',
      '# TYPE llmux_request_duration_seconds histogram',
      'llmux_request_duration_seconds_bucket{route="/v1/chat/completions",provider="local",le="0.1"} 0',
      'llmux_request_duration_seconds_bucket{route="/v1/chat/completions",provider="local",le="0.5"} 1',
      'llmux_request_duration_seconds_bucket{route="/v1/chat/completions",provider="local",le="1"} 1',
      'llmux_request_duration_seconds_bucket{route="/v1/chat/completions",provider="local",le="+Inf"} 1',
      'llmux_request_duration_seconds_sum{route="/v1/chat/completions",provider="local"} 0.5',
      'llmux_request_duration_seconds_count{route="/v1/chat/completions",provider="local"} 1',
      'llmux_request_duration_seconds_bucket{route="/v1/messages",provider="anthropic",le="0.1"} 2',
      'llmux_request_duration_seconds_bucket{route="/v1/messages",provider="anthropic",le="0.5"} 3',
      'llmux_request_duration_seconds_bucket{route="/v1/messages",provider="anthropic",le="1"} 4',
      'llmux_request_duration_seconds_bucket{route="/v1/messages",provider="anthropic",le="+Inf"} 5',
      'llmux_request_duration_seconds_sum{route="/v1/messages",provider="anthropic"} 3.15',
      'llmux_request_duration_seconds_count{route="/v1/messages",provider="anthropic"} 5',
      '',
    ]);
  });

  it('counts a value equal to a bound in that bucket (le means less than or equal)', () => {
    const h = createHistogram({ labelNames: [], buckets: [1, 2] });
    h.observe({}, 1);
    h.observe({}, 2);
    h.observe({}, 2.5);
    assert.deepEqual(h.render('x', 'y').split('\n').slice(2), [
      'x_bucket{le="1"} 1', 'x_bucket{le="2"} 2', 'x_bucket{le="+Inf"} 3', 'x_sum 5.5', 'x_count 3', '',
    ]);
  });

  it('ignores NaN so _sum stays a number, and renders an infinite observation in +Inf only', () => {
    const h = createHistogram({ labelNames: ['a'], buckets: [1] });
    h.observe({ a: 'x' }, Number.NaN);
    h.observe({ a: 'x' }, Infinity);
    assert.deepEqual(h.render('x', 'y').split('\n').slice(2, 6), ['x_bucket{a="x",le="1"} 0', 'x_bucket{a="x",le="+Inf"} 1', 'x_sum{a="x"} +Inf', 'x_count{a="x"} 1']);
  });

  it('a child observes into the same series as observe with the same labels', () => {
    const h = createHistogram({ labelNames: ['route'], buckets: [1] });
    const child = h.child({ route: '/r' });
    child.observe(0.5);
    h.observe({ route: '/r' }, 3);
    assert.match(h.render('x', 'y'), /^x_count\{route="\/r"\} 2$/m);
    assert.equal(h.render('x', 'y').split('\n').filter((l) => l.startsWith('x_count')).length, 1);
  });

  it('uses the default seconds buckets from 10 ms to 10 min', () => {
    const h = createHistogram({ labelNames: [] });
    h.observe({}, 42);
    const bounds = h.render('x', 'y').split('\n').filter((l) => l.startsWith('x_bucket')).map((l) => /le="([^"]+)"/.exec(l)?.[1]);
    assert.deepEqual(bounds, [...SECONDS_BUCKETS.map(String), '+Inf']);
    assert.equal(bounds[0], '0.01');
    assert.equal(bounds[bounds.length - 2], '600');
  });

  it('renders only the header when nothing was observed', () => {
    assert.equal(createHistogram({ labelNames: ['a'] }).render('x', 'y'), '# HELP x y\n# TYPE x histogram\n');
  });

  it('refuses bad names and buckets when created, not when scraped', () => {
    assert.throws(() => createHistogram({ labelNames: ['le'] }), RangeError);
    assert.throws(() => createHistogram({ labelNames: ['1route'] }), RangeError);
    assert.throws(() => createHistogram({ labelNames: ['__name'] }), RangeError);
    assert.throws(() => createHistogram({ labelNames: ['a', 'a'] }), RangeError);
    assert.throws(() => createHistogram({ labelNames: [], buckets: [1, 1] }), RangeError);
    assert.throws(() => createHistogram({ labelNames: [], buckets: [2, 1] }), RangeError);
    assert.throws(() => createHistogram({ labelNames: [], buckets: [1, Infinity] }), RangeError);
    assert.throws(() => createHistogram({ labelNames: [] }).render('bad-name', 'y'), RangeError);
  });
});

describe('counter', () => {
  it('renders one line per label set, with label values escaped', () => {
    const c = createCounter({ labelNames: ['provider', 'code'] });
    c.inc({ provider: 'local', code: 'upstream_timeout' });
    c.inc({ provider: 'local', code: 'upstream_timeout' }, 2);
    c.inc({ provider: 'we"ird\\name\nx', code: 'upstream_error' });
    assert.deepEqual(c.render('llmux_upstream_errors_total', 'Upstream failures\nby provider and code, C:\\ style.').split('\n'), [
      '# HELP llmux_upstream_errors_total Upstream failures\\nby provider and code, C:\\\\ style.',
      '# TYPE llmux_upstream_errors_total counter',
      'llmux_upstream_errors_total{provider="local",code="upstream_timeout"} 3',
      'llmux_upstream_errors_total{provider="we\\"ird\\\\name\\nx",code="upstream_error"} 1',
      '',
    ]);
  });

  it('only goes up: negative and NaN increments are ignored, fractions add', () => {
    const c = createCounter({ labelNames: ['model'] });
    const child = c.child({ model: 'm' });
    child.inc(0.25);
    child.inc(-5);
    child.inc(Number.NaN);
    c.inc({ model: 'm' }, 0.5);
    assert.equal(c.render('llmux_cost_usd_total', 'Cost.').split('\n')[2], 'llmux_cost_usd_total{model="m"} 0.75');
  });

  it('renders a counter without labels bare', () => {
    const c = createCounter({ labelNames: [] });
    c.inc({});
    assert.equal(c.render('n_total', 'h'), '# HELP n_total h\n# TYPE n_total counter\nn_total 1\n');
  });
});

describe('exposition escaping', () => {
  it('escapes label values and help text as the format requires', () => {
    assert.equal(escapeLabelValue('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
    assert.equal(escapeHelp('a\\b"c\nd'), 'a\\\\b"c\\nd');
    assert.equal(formatValue(-Infinity), '-Inf');
    assert.equal(formatValue(Number.NaN), 'NaN');
    assert.equal(formatValue(1e-7), '1e-7');
  });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { escapeHtml, formatAgo, formatLimit, html, isSameOrigin, layout } from '../../src/web/html.ts';

test('everything interpolated into a page is escaped unless it is markup built by html', () => {
  assert.equal(escapeHtml(`<a href="x" onclick='y'>&`), '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;');
  const inner = html`<b>${'<i>'}</b>`;
  assert.equal(html`<p title="${'"x"'}">${inner}${['<', html`<br>`]}${undefined}${false}</p>`.__html, '<p title="&quot;x&quot;"><b>&lt;i&gt;</b>&lt;<br></p>');
  assert.ok(layout({ title: '<t>', body: html`` }).includes('<title>&lt;t&gt; · llmux</title>'));
});

test('a page has a viewport meta tag and no inline script', () => {
  const page = layout({ title: 'x', body: html`<p>hi</p>` });
  assert.ok(page.includes('<meta name="viewport" content="width=device-width, initial-scale=1">'));
  assert.ok(!/<script>(?!<\/script>)/.test(page));
  assert.ok(!/<style/.test(page));
});

test('same-origin checks use Sec-Fetch-Site and Origin when present', () => {
  const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
  const root = 'http://127.0.0.1:8686';
  assert.equal(isSameOrigin(req({}), root), true);
  assert.equal(isSameOrigin(req({ 'sec-fetch-site': 'same-origin', origin: root }), root), true);
  assert.equal(isSameOrigin(req({ 'sec-fetch-site': 'cross-site' }), root), false);
  assert.equal(isSameOrigin(req({ 'sec-fetch-site': 'same-site' }), root), false);
  assert.equal(isSameOrigin(req({ origin: 'http://evil.example' }), root), false);
  // Our own forms under Referrer-Policy: no-referrer; the CSRF token still decides.
  assert.equal(isSameOrigin(req({ origin: 'null', 'sec-fetch-site': 'same-origin' }), root), true);
  assert.equal(isSameOrigin(req({ origin: 'null', 'sec-fetch-site': 'cross-site' }), root), false);
});

test('times read as "ago" and unlimited limits say so', () => {
  assert.equal(formatAgo(0, 10_000), 'just now');
  assert.equal(formatAgo(0, 240_000), '4 min ago');
  assert.equal(formatAgo(0, 7_200_000), '2 h ago');
  assert.equal(formatLimit(Infinity), 'unlimited');
  assert.equal(formatLimit(90000), '90,000');
});

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PAGE_ROUTES, mountPages } from '../../src/gateway/features.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { createDeviceFlow } from '../../src/auth/device-flow.ts';
import { createSessionStore } from '../../src/web/session.ts';
import type { GatewayInternals } from '../../src/gateway/server.ts';

describe('lazily loaded pages', () => {
  it('forward exactly the routes the page modules register', async () => {
    const registered: string[] = [];
    const routes = { add: (method: string, path: string) => { registered.push(`${method} ${path}`); } };
    const t = await startTestGateway();
    try {
      const internals = { ctx: { config: t.gateway.config, keys: t.gateway.keys, limiter: t.gateway.limiter, catalog: t.gateway.catalog, now: Date.now }, routes, log: () => {}, metrics: {} } as unknown as GatewayInternals;
      await mountPages(routes, internals, { flow: createDeviceFlow(), sessions: createSessionStore() });
    } finally {
      await t.close();
    }
    assert.deepEqual(registered.sort(), PAGE_ROUTES.map(([m, p]) => `${m} ${p}`).sort());
  });

  it('serve the pages through the gateway', async () => {
    const t = await startTestGateway();
    try {
      const page = await fetch(`${t.url}/dashboard`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<html/i);
      const css = await fetch(`${t.url}/assets/llmux.css`);
      assert.equal(css.status, 200);
      assert.match(css.headers.get('content-type') ?? '', /text\/css/);
    } finally {
      await t.close();
    }
  });
});

/**
 * The features llmux mounts on the core gateway: the device-flow API and the web pages (device
 * approval, dashboard). The CLI and the package entry pass them to `createGateway({ features })`;
 * an embedder may leave them out, or take the API without the pages.
 *
 * The web pages and the setup and device commands are loaded on first use: start-up is part of
 * the product (a sidecar is started often), and most runs never open a page.
 */
import type { Feature, GatewayInternals, RouteHandler, RouteRegistry } from './feature.ts';
import { deviceOptionsFromEnv, mountDeviceRoutes } from '../web/device-routes.ts';
import { createSessionStore } from '../web/session.ts';
import { createRouter } from '../http/router.ts';
import { notFound } from '../common/errors.ts';
import type { DeviceFlow } from '../auth/device-flow.ts';

type Handler = RouteHandler;

/** Every route the page modules register; test/features.test.ts checks it against them. */
export const PAGE_ROUTES: ReadonlyArray<readonly [string, string]> = [
  ['GET', '/assets/llmux.css'],
  ['GET', '/assets/llmux.js'],
  ['GET', '/assets/icon.svg'],
  ['GET', '/device'],
  ['POST', '/device'],
  ['GET', '/dashboard'],
  ['GET', '/dashboard/usage'],
  ['POST', '/dashboard/sign-in'],
  ['POST', '/dashboard/sign-out'],
  ['POST', '/dashboard/keys'],
  ['POST', '/dashboard/keys/revoke'],
  ['POST', '/dashboard/device'],
  ['POST', '/dashboard/health'],
];

type Stores = { flow: DeviceFlow; sessions: ReturnType<typeof createSessionStore> };

/** Loads the page modules and mounts them on `routes`. */
export async function mountPages(routes: RouteRegistry, internals: GatewayInternals, stores: Stores): Promise<void> {
  const [{ mountAssets }, { mountDevicePage }, { mountDashboard }, { mountUsagePage }] = await Promise.all([
    import('../web/html.ts'),
    import('../web/device-page.ts'),
    import('../web/dashboard.ts'),
    import('../web/usage-page.ts'),
  ]);
  const scoped: GatewayInternals = { ...internals, routes };
  mountAssets(routes);
  mountDevicePage(scoped, stores);
  mountDashboard(scoped, stores);
  mountUsagePage(scoped, stores);
}

/** The page modules on a router of their own; the gateway's routes forward to it. */
async function loadPages(internals: GatewayInternals, stores: Stores): Promise<ReturnType<typeof createRouter<Handler>>> {
  const router = createRouter<Handler>();
  await mountPages({ add: (method, path, handler) => router.add(method, path, handler) }, internals, stores);
  return router;
}

/**
 * The device-flow API, and with `pages` (the default) the device page and the dashboard: one grant
 * store and one session store per gateway, shared by the API and the pages.
 */
export function createWebFeature(options: { pages?: boolean } = {}): Feature {
  return (internals) => mountWeb(internals, options.pages !== false);
}

/** What `llmux serve` mounts. */
export const standardFeatures: readonly Feature[] = [createWebFeature()];

function mountWeb(internals: GatewayInternals, pagesToo: boolean): void {
  const flow = mountDeviceRoutes(internals, deviceOptionsFromEnv(internals.ctx.config.env));
  if (!pagesToo) return;
  const sessions = createSessionStore({ now: internals.ctx.now });
  let pages: ReturnType<typeof loadPages> | undefined;
  for (const [method, path] of PAGE_ROUTES) {
    internals.routes.add(method, path, async (req, res, params, record) => {
      pages ??= loadPages(internals, { flow, sessions });
      const result = (await pages).match(method, req.url ?? path);
      if (result.kind !== 'found') throw notFound();
      await result.match.handler(req, res, { ...params, ...result.match.params }, record);
    });
  }
}

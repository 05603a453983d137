/**
 * Feature modules that mount routes and commands onto the core (device flow, dashboard, setup).
 * Imported by the CLI and the package entry so that `createGateway` has them.
 */
import { registerFeature } from './server.ts';
import { deviceOptionsFromEnv, mountDeviceRoutes } from './auth/device-routes.ts';
import { mountAssets } from './web/html.ts';
import { createSessionStore } from './web/session.ts';
import { mountDevicePage } from './web/device-page.ts';
import { mountDashboard } from './web/dashboard.ts';
import './setup.ts';
import './device-cli.ts';

registerFeature((internals) => {
  // One grant store and one session store per gateway, shared by the API, the device page and the dashboard.
  const flow = mountDeviceRoutes(internals, deviceOptionsFromEnv(internals.ctx.config.env));
  const sessions = createSessionStore({ now: internals.ctx.now });
  mountAssets(internals.routes);
  mountDevicePage(internals, { flow, sessions });
  mountDashboard(internals, { flow, sessions });
});

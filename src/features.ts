/**
 * Feature modules that mount routes and commands onto the core (device flow, dashboard, setup).
 * Imported by the CLI and the package entry so that `createGateway` has them.
 */
export {};

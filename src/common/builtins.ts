/**
 * Node built-ins that cost start-up time and only some gateways use, loaded on first use:
 * `node:https` and `node:tls` (a local sidecar talking to a local model, with no shared state
 * over TLS, never needs them; loading them is about 2% of `llmux serve`'s start-up) and
 * `node:zlib` (most upstreams honour `identity`).
 */
import { request as httpRequest } from 'node:http';
import type https from 'node:https';
import { createRequire } from 'node:module';
import type tls from 'node:tls';
import type zlib from 'node:zlib';

function builtin(id: string): unknown {
  // process.getBuiltinModule (Node >= 20.16) also works inside the single-file executable's
  // bundle, where import.meta.url is no file; createRequire is the fallback for older 20.x.
  const getBuiltin = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  if (typeof getBuiltin === 'function') return getBuiltin(id);
  return createRequire(import.meta.url)(id);
}

/** `node:https`, loaded on the first call. */
export function loadHttps(): typeof https {
  return builtin('node:https') as typeof https;
}

/** The `request` of `node:https` for an https: URL (loading it then), else `node:http`'s. */
export function requestFor(url: URL): typeof httpRequest {
  return url.protocol === 'https:' ? loadHttps().request : httpRequest;
}

/** `node:tls`, loaded on the first call. */
export function loadTls(): typeof tls {
  return builtin('node:tls') as typeof tls;
}

/** `node:zlib`, loaded on the first call. */
export function loadZlib(): typeof zlib {
  return builtin('node:zlib') as typeof zlib;
}

/**
 * A server listening on a port, without the two modules Node loads for every `listen`: `cluster`
 * (with `child_process` and `dgram` behind it) and `dns` (looked up even for an IP address).
 *
 * Why: `server.listen(port, host)` requires `dns` and calls `dns.lookup` whenever a host is given,
 * then requires `cluster` to ask whether this process is a cluster worker (net.js
 * `lookupAndListen`, `listenInCluster`). llmux never runs as one, and its host is usually an IP
 * address. Loading the two cost about 3 ms of a start-up that is about 28 ms more than
 * `node -e 0`'s (bench/what-is-left.md, "start-up without `cluster` and `dns`").
 *
 * How: when the host is an IP address, this process is no cluster worker and nobody traces
 * `net.server.listen`, it calls what `listen` itself ends in for a process that is no worker:
 * `server._listen2(address, port, family, backlog, fd, flags)` (net.js `setupListenHandle`, kept by
 * Node under that name as a "legacy alias" because code wraps it). It binds, listens and then emits
 * `listening` or `error` on the next tick, exactly as `listen` does. In every other case (a host
 * name such as `localhost`, a port `listen` would refuse, a worker, a tracer, a Node without
 * `_listen2`) it calls `listen`.
 */
import { tracingChannel } from 'node:diagnostics_channel';
import { isIP } from 'node:net';
import type { Server } from 'node:net';

/** The backlog `listen` uses when given none (net.js: the kernel rounds 511 + 1 up to 512). */
const DEFAULT_BACKLOG = 511;

/** What `listen` hands `_listen2`; absent from Node's public types. */
interface ListenHandleSetup {
  _listen2?: (address: string, port: number, family: number, backlog: number, fd: undefined, flags: number) => void;
}

let listenTracing: { hasSubscribers: boolean } | undefined;

/** Resolves once `server` listens on `host`:`port` (0: any free port); rejects with `listen`'s own error. */
export function listenOn(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (err: Error): void => {
      server.off('listening', listening);
      reject(err);
    };
    const listening = (): void => {
      server.off('error', failed);
      resolve();
    };
    server.once('error', failed);
    server.once('listening', listening);
    const family = isIP(host);
    const setup = (server as Server & ListenHandleSetup)._listen2;
    try {
      if (family === 0 || typeof setup !== 'function' || !setUpDirectly(server, port)) server.listen(port, host);
      else setup.call(server, host, port, family, DEFAULT_BACKLOG, undefined, 0);
    } catch (err) {
      // Refused at once (a server already listening): no event follows, so no listener stays.
      server.off('error', failed);
      server.off('listening', listening);
      reject(err);
    }
  });
}

/**
 * Whether `listen`'s own path can be skipped for a server not yet listening on a port `listen`
 * takes: not in a cluster worker (which asks its primary for the handle), not while something
 * traces `net.server.listen` (it would see nothing).
 */
function setUpDirectly(server: Server, port: number): boolean {
  if (server.listening || !Number.isInteger(port) || port < 0 || port > 65535) return false;
  if (process.env['NODE_UNIQUE_ID'] !== undefined) return false;
  listenTracing ??= tracingChannel('net.server.listen');
  return !listenTracing.hasSubscribers;
}

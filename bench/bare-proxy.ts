/**
 * The floor: the least a `node:http` proxy can do. No parsing, no auth, no logging: the request is
 * piped to the upstream over a keep-alive agent and the answer is piped back, status and headers
 * as they came. Whatever llmux spends above this is the price of being a gateway.
 *
 * Run as a process: `node bare-proxy.js --upstream-port N [--port N]`; prints `{"port":N}` on stdout.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { collectOnSignal, isEntryPoint } from './entry.ts';

export interface BareProxyOptions {
  upstreamPort: number;
  /** Default 0: any free port. */
  port?: number;
}

export interface RunningProxy {
  port: number;
  close(): Promise<void>;
}

/** Starts the pipe proxy on 127.0.0.1 in front of an upstream on 127.0.0.1:`upstreamPort`. */
export async function startBareProxy(options: BareProxyOptions): Promise<RunningProxy> {
  const agent = new http.Agent({ keepAlive: true, maxFreeSockets: 256, scheduling: 'lifo' });
  const sockets = new Set<Socket>();
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const upstreamReq = http.request({
      host: '127.0.0.1',
      port: options.upstreamPort,
      method: req.method,
      path: req.url,
      headers: req.headers,
      agent,
    }, (upstreamRes) => {
      res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
      upstreamRes.pipe(res);
    });
    upstreamReq.on('error', () => {
      if (res.headersSent) res.destroy();
      else {
        res.writeHead(502);
        res.end();
      }
    });
    // The client leaving mid-answer stops the upstream request too.
    res.once('close', () => {
      if (!res.writableFinished) upstreamReq.destroy();
    });
    req.pipe(upstreamReq);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

if (isEntryPoint(import.meta.url)) {
  const { values } = parseArgs({ options: { port: { type: 'string' }, 'upstream-port': { type: 'string' } } });
  const upstreamPort = Number(values['upstream-port']);
  if (!Number.isInteger(upstreamPort) || upstreamPort <= 0) {
    process.stderr.write('bare-proxy: --upstream-port N is required\n');
    process.exit(2);
  }
  const proxy = await startBareProxy({ upstreamPort, port: values.port === undefined ? 0 : Number(values.port) });
  process.stdout.write(`${JSON.stringify({ port: proxy.port })}\n`);
  const stop = (): void => {
    proxy.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.once('SIGTERM', stop);
  collectOnSignal();
  process.once('SIGINT', stop);
}

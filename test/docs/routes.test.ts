/**
 * Every `curl` of the user docs that calls the local gateway uses a route it serves: the method and
 * path of each, sent to a running gateway, find a route (no 404 "No route for", no 405). Keys and
 * bodies are left out: a refusal from the route itself (401, 400) still shows the route is there.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { curlRequest, docFiles, documentedCommands } from '../helpers/markdown.ts';

const REQUESTS = docFiles().flatMap((file) => documentedCommands(file).flatMap(({ where, words }) => {
  const request = curlRequest(words);
  return request === undefined ? [] : [{ where, ...request }];
}));

let gw: TestGateway;
before(async () => {
  gw = await startTestGateway();
});
after(async () => {
  await gw.close();
});

/** Whether the gateway has a route for `method` `path`. */
async function routed(method: string, path: string): Promise<{ ok: boolean; status: number }> {
  const response = await fetch(`${gw.url}${path}`, { method });
  const text = await response.text();
  return { ok: response.status !== 405 && !text.includes('No route for'), status: response.status };
}

describe('the curl commands of the docs', () => {
  it('are found: the quick start\'s, the device flow\'s, usage\'s, several processes\'', () => {
    assert.ok(REQUESTS.length >= 10, `${REQUESTS.length} curl commands`);
    for (const path of ['/healthz', '/v1/chat/completions', '/v1/messages', '/v1/models', '/auth/device', '/auth/device/token', '/v1/usage']) {
      assert.ok(REQUESTS.some((r) => r.path === path), path);
    }
  });

  it('each call a route the gateway serves, with the method the command uses', async () => {
    const unrouted: string[] = [];
    for (const { where, method, path } of REQUESTS) {
      const { ok, status } = await routed(method, path);
      if (!ok) unrouted.push(`${where}: ${method} ${path}: ${status}`);
    }
    assert.deepEqual(unrouted, []);
  });

  it('would catch a path or a method the gateway does not serve', async () => {
    assert.equal((await routed('GET', '/v1/chat/complete')).ok, false);
    assert.equal((await routed('GET', '/v1/messages')).ok, false);
    assert.equal((await routed('GET', '/healthz')).ok, true);
    assert.deepEqual(curlRequest(['curl', '-s', '-o', '/dev/null', 'http://127.0.0.1:$port/v1/usage?key=all']), { method: 'GET', path: '/v1/usage' });
    assert.deepEqual(curlRequest(['curl', 'http://127.0.0.1:8686/v1/messages', '-d', '{}']), { method: 'POST', path: '/v1/messages' });
  });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { loadHttps, loadTls, loadZlib, requestFor } from '../../src/common/builtins.ts';

test('each loader gives the built-in module itself', () => {
  assert.equal(loadHttps().request, https.request);
  assert.equal(loadTls().connect, tls.connect);
  assert.equal(loadZlib().createGunzip, zlib.createGunzip);
});

test('requestFor picks https for an https: URL and http for the rest', () => {
  assert.equal(requestFor(new URL('https://example.test/v1')), https.request);
  assert.equal(requestFor(new URL('http://127.0.0.1:8686/v1')), http.request);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { loadHttps, loadTls, loadZlib } from '../../src/common/builtins.ts';

test('each loader gives the built-in module itself', () => {
  assert.equal(loadHttps().request, https.request);
  assert.equal(loadTls().connect, tls.connect);
  assert.equal(loadZlib().createGunzip, zlib.createGunzip);
});

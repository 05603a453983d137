import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { SYSTEM_DIRS, SYSTEM_FILES, testFilesUnder, tierFiles, tierOf } from '../scripts/list-tests.mjs';

/** What only a system test may do, as it shows in a test file's text. */
const SYSTEM_ONLY: ReadonlyArray<[string, string]> = [
  ['node:child_process', 'a child process'],
  ['startTestGateway(', 'a whole gateway over sockets'],
  ['startCluster(', 'llmux processes on a state server'],
  ['startRedis(', 'a redis-server'],
  ['launchChromium(', 'Chromium'],
];

describe('test tiers (scripts/list-tests.mjs)', () => {
  it('puts every test file but the client suite in one tier, and npm test runs both', () => {
    const unit = tierFiles('unit');
    const system = tierFiles('system');
    const all = testFilesUnder('test');
    assert.deepEqual([...unit, ...system].sort(), all.filter((f) => !f.startsWith('test/clients/')));
    assert.deepEqual(tierFiles(), [...unit, ...system].sort());
    assert.ok(unit.includes('test/translate/chat-to-messages.test.ts') && system.includes('test/resilience/soak.test.ts'));
  });

  it('names only folders and files that exist, so a moved test does not fall into the unit tier unseen', () => {
    for (const dir of SYSTEM_DIRS) assert.ok(existsSync(dir), dir);
    for (const file of Object.keys(SYSTEM_FILES)) assert.equal(tierOf(file), 'system', file);
    for (const file of Object.keys(SYSTEM_FILES)) assert.ok(existsSync(file), `${file} is listed as a system test but is not there`);
  });

  it('keeps child processes, whole gateways, Redis and Chromium out of the unit tier', () => {
    for (const file of tierFiles('unit')) {
      if (file === 'test/tiers.test.ts') continue;
      const text = readFileSync(file, 'utf8');
      for (const [marker, what] of SYSTEM_ONLY) {
        assert.ok(!text.includes(marker), `${file} uses ${what}: list it among the system tests in scripts/list-tests.mjs`);
      }
    }
  });
});

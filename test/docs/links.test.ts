/**
 * The user docs hold together: every relative link of README.md, docs/*.md (and CHANGELOG.md,
 * ARCHITECTURE.md) names a file that exists and, into a Markdown page, an anchor that page has (GitHub's anchors of its headings);
 * every docs page is reachable from the docs index; the README stays a user's README.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { ROOT, anchors, docFiles, links, readDoc, shellCommands, slug } from '../helpers/markdown.ts';

/** Where a link of `file` points: the file (relative to the checkout) and the anchor, if any. */
function resolveLink(file: string, target: string): { path: string; anchor: string | undefined } {
  const hash = target.indexOf('#');
  const path = hash === -1 ? target : target.slice(0, hash);
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  return { path: path === '' ? file : normalize(join(dirname(file), decodeURI(path))), anchor };
}

describe('the docs\' links', () => {
  for (const file of [...docFiles(), 'CHANGELOG.md', 'ARCHITECTURE.md']) {
    it(`every relative link and anchor of ${file} resolves`, () => {
      const broken: string[] = [];
      for (const target of links(readDoc(file))) {
        if (/^[a-z][a-z+.-]*:/i.test(target)) continue;
        const { path, anchor } = resolveLink(file, target);
        if (relative(ROOT, join(ROOT, path)).startsWith('..') || !existsSync(join(ROOT, path))) {
          broken.push(`${target}: no file ${path}`);
          continue;
        }
        if (anchor !== undefined && path.endsWith('.md') && !anchors(readDoc(path)).has(anchor)) broken.push(`${target}: no heading #${anchor} in ${path}`);
      }
      assert.deepEqual(broken, []);
    });
  }

  it('reach every docs page from the docs index, and the index from the README', () => {
    const index = links(readDoc('docs/README.md'));
    for (const page of docFiles().filter((f) => f.startsWith('docs/') && f !== 'docs/README.md')) {
      assert.ok(index.includes(page.slice('docs/'.length)), `docs/README.md links ${page}`);
    }
    assert.ok(links(readDoc('README.md')).includes('docs/README.md'));
  });

  it('keep the README a user\'s guide: set-up, the quick start and the tools, at most 350 lines', () => {
    const readme = readDoc('README.md');
    assert.ok(readme.split('\n').length <= 350, `README.md has ${readme.split('\n').length} lines: move reference material into docs/`);
    for (const heading of ['set-up', 'quick-start-one-minute', 'pointing-tools-at-llmux', 'claude-code', 'codex-cli', 'gemini-cli']) {
      assert.ok(anchors(readme).has(heading), heading);
    }
  });
});

describe('the Markdown reading the docs tests rely on', () => {
  it('makes anchors as GitHub does, repeated headings numbered', () => {
    assert.equal(slug('Checking a setup: `llmux doctor`'), 'checking-a-setup-llmux-doctor');
    assert.equal(slug('Google Gen AI SDK (`@google/genai`)'), 'google-gen-ai-sdk-googlegenai');
    assert.equal(slug('AI SDK\'s Google provider (`@ai-sdk/google`)'), 'ai-sdks-google-provider-ai-sdkgoogle');
    assert.equal(slug('`builtin_catalog`'), 'builtin_catalog');
    assert.equal(slug('Metrics: `GET /metrics`'), 'metrics-get-metrics');
    assert.deepEqual([...anchors('# A\n\n## Notes\n\n```sh\n# not a heading\n```\n\n## Notes\n')], ['a', 'notes', 'notes-1']);
  });

  it('finds links outside code only', () => {
    assert.deepEqual(links('See [a](a.md#x) and `[b](b.md)`.\n\n```md\n[c](c.md)\n```\n'), ['a.md#x']);
  });

  it('splits a script into simple commands, reading $(…) inside them', () => {
    const script = [
      'export KEY=$(npm run -s llmux -- keys create --name "my key")   # a comment',
      'LLMUX_HOME=/srv llmux serve --port 8701 2>>/tmp/a.log &',
      'curl -s http://127.0.0.1:8686/healthz && \\',
      '  echo \'$(not run)\' | grep ok; done',
    ].join('\n');
    assert.deepEqual(shellCommands(script), [
      ['npm', 'run', '-s', 'llmux', '--', 'keys', 'create', '--name', 'my key'],
      ['export', 'KEY=$(…)'],
      ['llmux', 'serve', '--port', '8701'],
      ['curl', '-s', 'http://127.0.0.1:8686/healthz'],
      ['echo', '$(not run)'],
      ['grep', 'ok'],
      ['done'],
    ]);
  });
});

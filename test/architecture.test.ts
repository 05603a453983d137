/**
 * The shape of src/, kept: every import between src/ modules (type-only imports and dynamic
 * `import()` included) must be one ARCHITECTURE.md allows. A unit is a folder of src/ (`translate/`)
 * or a top-level file (`pipeline`). When this fails, change the design, not the table — or, when
 * the rule itself was wrong, change ARCHITECTURE.md and this table together and say why.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** What each unit may import besides itself. Leaves first, then upward. */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  // Leaves: the vocabulary everything else shares.
  'errors': [],
  'json': [],
  // Byte-level JSON: the one walk over a request body, parsing it in pieces, splicing members.
  'json-bytes': [],
  'ids': [],
  'version': [],
  'files': [],
  'cli-io': [],
  'config-types': ['formats/'],
  'request-record': ['formats/'],
  // Bytes and wire formats: no HTTP, no gateway.
  'sse/': [],
  'formats/': ['errors', 'json', 'json-bytes'],
  'translate/': ['formats/', 'sse/', 'errors', 'json', 'ids'],
  // The Responses dialect resolves and stores through responses/ (its turn: src/dialects/responses.ts).
  'dialects/': ['formats/', 'translate/', 'responses/', 'errors', 'json', 'json-bytes', 'ids'],
  // State and rules: they answer in numbers and records; http/ renders them.
  'limits/': ['config-types', 'errors'],
  'auth/': ['config-types', 'errors', 'json', 'ids', 'files'],
  // Responses API state: stored responses, their resolution, sealed reasoning.
  'responses/': ['formats/', 'errors', 'json', 'files'],
  'catalog/': ['config-types', 'formats/', 'json'],
  'usage/': ['config-types', 'formats/', 'translate/', 'errors', 'request-record'],
  'config-entries': ['config-types', 'catalog/', 'formats/', 'json'],
  'config': ['config-types', 'config-entries', 'catalog/', 'json', 'state/'],
  // Shared state (Valkey/Redis): the RESP client, and the shared implementations of the limiter,
  // key store, device grants, usage ledger and stored responses, behind those units' interfaces.
  'state/': ['config-types', 'errors', 'json', 'limits/', 'auth/', 'usage/', 'responses/', 'formats/'],
  // HTTP: reading requests and writing responses; knows no pipeline.
  'http/': ['errors', 'json', 'json-bytes', 'limits/'],
  // Upstreams and answers.
  'providers/': ['config-types', 'formats/', 'dialects/', 'translate/', 'errors', 'json', 'json-bytes', 'ids', 'request-record'],
  'relay/': ['config-types', 'formats/', 'dialects/', 'translate/', 'sse/', 'errors', 'json', 'http/', 'providers/'],
  // One request's life, and the gateway's own routes.
  'metrics': ['request-record', 'translate/', 'usage/'],
  'request-log': ['request-record', 'translate/'],
  'pipeline': [
    'config-types', 'catalog/', 'auth/', 'limits/', 'formats/', 'dialects/', 'translate/', 'usage/', 'errors', 'http/',
    'providers/', 'relay/', 'request-record',
  ],
  'feature': ['config-types', 'catalog/', 'auth/', 'limits/', 'usage/', 'metrics', 'request-log', 'request-record'],
  'routes': ['pipeline', 'feature', 'auth/', 'catalog/', 'formats/', 'responses/', 'errors', 'json', 'http/', 'usage/', 'metrics', 'request-record', 'version'],
  // Features mounted on the gateway: pages and the device flow. They receive what they need.
  'web/': ['auth/', 'config-types', 'errors', 'json', 'ids', 'feature', 'http/', 'limits/', 'usage/', 'request-log', 'request-record'],
  'features': ['feature', 'web/', 'auth/', 'errors', 'http/'],
  // Wiring and entry points: the only places that may import the gateway itself.
  'server': [
    'config', 'config-types', 'catalog/', 'auth/', 'limits/', 'providers/', 'responses/', 'http/', 'errors', 'pipeline', 'routes',
    'metrics', 'request-log', 'request-record', 'feature', 'usage/', 'state/', 'version',
  ],
  'setup': ['config', 'config-types', 'catalog/', 'auth/', 'formats/', 'cli-io', 'json', 'files'],
  'device-cli': ['cli-io'],
  'usage-cli': ['cli-io', 'config', 'config-types', 'auth/', 'usage/', 'errors', 'state-cli'],
  'state-cli': ['cli-io', 'config', 'config-types', 'auth/', 'usage/', 'state/'],
  'cli': ['config', 'config-types', 'auth/', 'catalog/', 'cli-io', 'errors', 'version', 'server', 'features', 'setup', 'device-cli', 'usage-cli', 'state-cli'],
  'index': ['server', 'features', 'auth/', 'config-types', 'usage/', 'version'],
};

type Graph = Map<string, Set<string>>;

/** The unit of a file under `src`: its first folder (`translate/`), or its name without `.ts`. */
function unitOf(file: string, src: string): string {
  const path = relative(src, file);
  const slash = path.indexOf('/');
  return slash === -1 ? path.replace(/\.ts$/, '') : `${path.slice(0, slash)}/`;
}

const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)'(\.{1,2}\/[^']+)'/g;

/** Unit -> units it imports, with one example file per edge for the message. */
function importGraph(src: string): { graph: Graph; example: Map<string, string> } {
  const graph: Graph = new Map();
  const example = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) addFile(path);
    }
  };
  const addFile = (file: string): void => {
    const from = unitOf(file, src);
    if (!graph.has(from)) graph.set(from, new Set());
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const to = unitOf(resolve(dirname(file), match[1] as string), src);
      if (to === from) continue;
      graph.get(from)?.add(to);
      example.set(`${from} -> ${to}`, `${relative(src, file)} imports ${match[1]}`);
    }
  };
  walk(src);
  return { graph, example };
}

/** Every edge the table does not allow, and every unit it does not know. */
function violations(graph: Graph, allowed: Readonly<Record<string, readonly string[]>>): string[] {
  const found: string[] = [];
  for (const [from, targets] of graph) {
    const may = allowed[from];
    if (may === undefined) {
      found.push(`${from} is not in ARCHITECTURE.md's table: say where it sits and what it may import`);
      continue;
    }
    for (const to of targets) if (!may.includes(to)) found.push(`${from} -> ${to}`);
  }
  return found.sort();
}

test('every import between src/ modules is one ARCHITECTURE.md allows', () => {
  const { graph, example } = importGraph(SRC);
  const found = violations(graph, ALLOWED).map((edge) => `${edge}${example.has(edge) ? ` (${example.get(edge)})` : ''}`);
  assert.deepEqual(found, []);
});

test('nothing but the entry points imports the gateway, and the layers the issue names stay apart', () => {
  for (const [unit, may] of Object.entries(ALLOWED)) {
    if (unit !== 'cli' && unit !== 'index') assert.ok(!may.includes('server'), `${unit} may not import server`);
  }
  assert.ok(!ALLOWED['translate/']?.includes('http/'));
  assert.ok(!ALLOWED['sse/']?.includes('formats/'));
  assert.ok(!ALLOWED['limits/']?.includes('http/'));
  assert.ok(!ALLOWED['http/']?.includes('pipeline'));
});

test('the check finds a forbidden import and an unknown unit', () => {
  const graph: Graph = new Map([
    ['translate/', new Set(['formats/', 'http/'])],
    ['newthing', new Set(['errors'])],
  ]);
  assert.deepEqual(violations(graph, ALLOWED), [
    'newthing is not in ARCHITECTURE.md\'s table: say where it sits and what it may import',
    'translate/ -> http/',
  ]);
});

test('the table names only units that exist', () => {
  const { graph } = importGraph(SRC);
  for (const unit of Object.keys(ALLOWED)) assert.ok(graph.has(unit), `${unit} is in the table but not in src/`);
});

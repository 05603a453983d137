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

/**
 * What each unit may import besides itself. A unit is a folder of src/ (`translate/`), or a file
 * named by its path without `.ts` (`gateway/pipeline`) where a folder's files stand apart; a file
 * belongs to the most specific unit that names it. Leaves first, then upward.
 */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  // Leaves: the vocabulary everything else shares (errors, JSON and JSON bytes, ids, files, version).
  'common/': [],
  'config/types': ['formats/'],
  'gateway/request-record': ['formats/'],
  // Bytes and wire formats: no HTTP, no gateway.
  'sse/': [],
  'formats/': ['common/'],
  'translate/': ['formats/', 'sse/', 'common/'],
  // Reading a same-format answer on its way through: the usage tap, usage readers, the model field.
  'passthrough/': ['formats/', 'sse/', 'common/'],
  // The Responses dialect resolves and stores through responses/ (its turn: src/dialects/responses.ts);
  // every dialect's turn seals through responses/, and the chat one recalls its calls' carried state from carry/.
  'dialects/': ['formats/', 'translate/', 'passthrough/', 'responses/', 'carry/', 'common/'],
  // How a provider's requests are carried (URL, envelope, authorisation, stream framing), apart
  // from their format: no dialect, no transport (the transport imports it). Bedrock and Vertex use
  // their clouds' leaf modules (SigV4, the event stream, AWS credentials; Google's OAuth tokens).
  'platforms/': ['config/types', 'formats/', 'common/', 'platforms/aws/', 'platforms/google/'],
  // State and rules: they answer in numbers and records; http/ renders them.
  'limits/': ['config/types', 'common/'],
  'auth/': ['config/types', 'common/'],
  // Responses API state: stored responses, their resolution, sealed reasoning.
  'responses/': ['formats/', 'common/'],
  // A chat client's carried reasoning state, kept by key and tool call (llmux.md section 11): a leaf store.
  'carry/': ['common/'],
  'catalog/': ['config/types', 'formats/', 'common/'],
  'usage/': ['config/types', 'formats/', 'common/', 'gateway/request-record'],
  'config/entries': ['config/types', 'catalog/', 'formats/', 'common/'],
  'config/load': ['config/types', 'config/entries', 'config/routing', 'catalog/', 'common/', 'state/'],
  // The file's routing settings (api_keys, discover, deployments, aliases, routes), beside entries.
  'config/routing': ['config/types', 'config/entries', 'common/'],
  // Deployments and routing: strategies, rests, key pools, sticky conversations, aliases, routes,
  // discovery. Answers in records; the attempts loop and the gateway wire it in.
  'routing/': ['config/types', 'formats/', 'common/', 'limits/'],
  // Shared state (Valkey/Redis): the RESP client, and the shared implementations of the limiter,
  // key store, device grants, usage ledger and stored responses, behind those units' interfaces.
  'state/': ['config/types', 'common/', 'limits/', 'auth/', 'usage/', 'responses/', 'carry/', 'formats/', 'routing/'],
  // HTTP: reading requests and writing responses; knows no pipeline.
  'http/': ['common/', 'limits/'],
  // Cloud platforms' own protocols, under the platform seam: SigV4, Bedrock's event stream and AWS
  // credentials; Google's JWT assertions and OAuth tokens. Leaves: they know no wire format.
  'platforms/aws/': ['common/'],
  'platforms/google/': ['common/'],
  // Upstreams and answers.
  // routing/: each attempt's deployment and provider key come from the attempt sequence.
  'providers/': ['config/types', 'formats/', 'dialects/', 'platforms/', 'translate/', 'common/', 'gateway/request-record', 'routing/'],
  'relay/': ['config/types', 'formats/', 'dialects/', 'translate/', 'passthrough/', 'sse/', 'common/', 'http/', 'providers/'],
  // One request's life, and the gateway's own routes.
  'gateway/metrics': ['gateway/request-record', 'formats/', 'usage/', 'routing/'],
  'gateway/request-log': ['gateway/request-record', 'formats/'],
  'gateway/pipeline': [
    'config/types', 'catalog/', 'auth/', 'limits/', 'formats/', 'dialects/', 'usage/', 'common/', 'http/',
    'providers/', 'relay/', 'gateway/request-record', 'routing/',
  ],
  // Routing's wiring: the router, the resolver and discovery over the config and the catalog's rules.
  'gateway/routing': ['config/types', 'catalog/', 'platforms/', 'routing/', 'gateway/request-log'],
  // common/: the error a route's error renderer takes.
  'gateway/feature': ['config/types', 'catalog/', 'auth/', 'limits/', 'usage/', 'gateway/metrics', 'gateway/request-log', 'gateway/request-record', 'common/', 'doctor/report', 'routing/'],
  // dialects/: each format's model routes, its error body and its estimate come from its dialect.
  'gateway/routes': [
    'gateway/pipeline', 'gateway/feature', 'auth/', 'catalog/', 'formats/', 'responses/', 'common/', 'http/', 'usage/',
    'gateway/metrics', 'gateway/request-record', 'dialects/', 'routing/',
  ],
  // Features mounted on the gateway: pages and the device flow. They receive what they need.
  'web/': ['auth/', 'config/types', 'common/', 'gateway/feature', 'http/', 'limits/', 'usage/', 'gateway/request-log', 'gateway/request-record', 'doctor/report', 'routing/'],
  'gateway/features': ['gateway/feature', 'web/', 'auth/', 'common/', 'http/'],
  // Wiring and entry points: the only places that may import the gateway itself.
  'gateway/server': [
    'config/load', 'config/types', 'catalog/', 'auth/', 'limits/', 'providers/', 'responses/', 'carry/', 'http/', 'common/',
    'gateway/pipeline', 'gateway/routes', 'gateway/metrics', 'gateway/request-log', 'gateway/request-record', 'gateway/feature',
    'usage/', 'state/', 'platforms/', 'doctor/', 'gateway/routing',
  ],
  // `llmux doctor`'s checks (the dashboard runs them too, through the gateway's services), and the
  // report they make, a leaf the pages render.
  'doctor/report': [],
  'doctor/': ['config/types', 'catalog/', 'auth/', 'state/', 'dialects/', 'providers/', 'platforms/', 'doctor/report'],
  // The CLI's command table and its commands, and their terminal helpers.
  // platforms/: `llmux models` resolves platform credentials as the gateway does before it lists their models.
  'commands/': ['config/load', 'config/types', 'catalog/', 'auth/', 'formats/', 'common/', 'usage/', 'state/', 'doctor/', 'doctor/report', 'platforms/', 'routing/'],
  'cli': ['config/load', 'config/types', 'auth/', 'catalog/', 'commands/', 'common/', 'usage/', 'gateway/server', 'gateway/features'],
  'index': ['gateway/server', 'gateway/features', 'auth/', 'config/types', 'usage/', 'common/'],
};

type Graph = Map<string, Set<string>>;

/**
 * The unit of a file under `src`: the most specific key of `units` naming it (a file key such as
 * `gateway/pipeline`, else its folder, `translate/`), or, for a file no key names, its first folder
 * or its own name without `.ts` (so an unknown unit is reported, not folded into a known one).
 */
function unitOf(file: string, src: string, units: readonly string[] = Object.keys(ALLOWED)): string {
  const path = relative(src, file).replace(/\.ts$/, '');
  if (units.includes(path)) return path;
  let folder: string | undefined;
  for (const unit of units) {
    if (unit.endsWith('/') && path.startsWith(unit) && unit.length > (folder?.length ?? 0)) folder = unit;
  }
  if (folder !== undefined) return folder;
  const slash = path.indexOf('/');
  return slash === -1 ? path : `${path.slice(0, slash)}/`;
}

// Single- or double-quoted specifiers, static, type-only, re-exported or dynamic.
const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\1/g;

/** The relative specifiers a source file imports. */
function specifiersOf(source: string): string[] {
  return [...source.matchAll(IMPORT)].map((match) => match[2] as string);
}

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
    for (const specifier of specifiersOf(readFileSync(file, 'utf8'))) {
      const to = unitOf(resolve(dirname(file), specifier), src);
      if (to === from) continue;
      graph.get(from)?.add(to);
      example.set(`${from} -> ${to}`, `${relative(src, file)} imports ${specifier}`);
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
    if (unit !== 'cli' && unit !== 'index') assert.ok(!may.includes('gateway/server'), `${unit} may not import gateway/server`);
  }
  assert.ok(!ALLOWED['translate/']?.includes('http/'));
  assert.ok(!ALLOWED['sse/']?.includes('formats/'));
  assert.ok(!ALLOWED['limits/']?.includes('http/'));
  assert.ok(!ALLOWED['http/']?.includes('gateway/pipeline'));
});

test('a platform knows no dialect and no transport: formats and carriage stay apart', () => {
  for (const unit of ['dialects/', 'providers/', 'translate/', 'relay/', 'gateway/pipeline']) {
    assert.ok(!ALLOWED['platforms/']?.includes(unit), `platforms/ may not import ${unit}`);
  }
  assert.ok(!ALLOWED['dialects/']?.includes('platforms/'), 'dialects/ may not import platforms/');
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

test('imports are read whether quoted with single or double quotes, typed, re-exported or dynamic', () => {
  const source = [
    "import { a } from '../http/a.ts';",
    'import { b } from "../http/b.ts";',
    'import type { C } from "../gateway/server.ts";',
    "export { d } from \"./d.ts\";",
    'const e = await import("../web/e.ts");',
    "import 'node:fs';",
  ].join('\n');
  assert.deepEqual(specifiersOf(source), ['../http/a.ts', '../http/b.ts', '../gateway/server.ts', './d.ts', '../web/e.ts']);
});

test('a file belongs to the most specific unit that names it', () => {
  const src = '/s';
  assert.equal(unitOf('/s/gateway/pipeline.ts', src), 'gateway/pipeline');
  assert.equal(unitOf('/s/translate/chat-to-messages.ts', src), 'translate/');
  assert.equal(unitOf('/s/common/errors.ts', src), 'common/');
  assert.equal(unitOf('/s/gateway/new-file.ts', src), 'gateway/');
  assert.equal(unitOf('/s/newthing.ts', src), 'newthing');
});

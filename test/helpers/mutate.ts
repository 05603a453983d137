/**
 * Seeded random mutations of JSON request bodies, for the validators' "only 400s, never a crash"
 * tests. Each format adds the words and shapes that are plausible in its own bodies.
 */
import assert from 'node:assert/strict';
import { GatewayError } from '../../src/common/errors.ts';
import { seededRandom } from './split.ts';

export { seededRandom };

type Body = Record<string, unknown>;

export function pick<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)] as T;
}

/** Values that are wrong almost everywhere, shared by both formats. */
const COMMON_HOSTILE: ReadonlyArray<() => unknown> = [
  () => null,
  () => 0,
  () => -1,
  () => 1.5,
  () => 1e308,
  () => '',
  () => 'x',
  () => 'data:image/png;base64,AAAA',
  () => 'user',
  () => 'assistant',
  () => 'text',
  () => true,
  () => [],
  () => ({}),
  () => [null],
  () => [{}],
  () => ({ type: 'text' }),
  () => JSON.parse('{"__proto__": {"type": "text", "text": "x"}}'),
  () => JSON.parse('{"constructor": {"prototype": 1}, "type": "constructor"}'),
  () => Array.from({ length: 10_000 }, () => ({ type: 'text', text: 'x' })),
  () => {
    let deep: unknown = {};
    for (let i = 0; i < 2_000; i++) deep = [deep];
    return deep;
  },
];

/** Every [container, key] in the tree, so a mutation can land anywhere. */
function slots(root: Body): Array<[Body | unknown[], string | number]> {
  const found: Array<[Body | unknown[], string | number]> = [];
  const stack: unknown[] = [root];
  while (stack.length > 0 && found.length < 5_000) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length && i < 50; i++) {
        found.push([node, i]);
        stack.push(node[i]);
      }
    } else if (typeof node === 'object' && node !== null) {
      for (const key of Object.keys(node)) {
        found.push([node as Body, key]);
        stack.push((node as Body)[key]);
      }
    }
  }
  return found;
}

/**
 * A mutator for one format: `words` are strings and `shapes` objects plausible in its bodies,
 * `keys` the field names a mutation may add.
 */
export function createMutator(format: { words: string[]; shapes: unknown[]; keys: string[] }): (body: Body, random: () => number) => void {
  const hostile: ReadonlyArray<() => unknown> = [
    ...COMMON_HOSTILE,
    ...format.words.map((word) => () => word),
    ...format.shapes.map((shape) => () => structuredClone(shape)),
  ];
  return (body, random) => {
    const all = slots(body);
    if (all.length === 0) return;
    const [container, key] = pick(all, random);
    const action = random();
    if (action < 0.2) {
      if (Array.isArray(container)) container.splice(key as number, 1);
      else delete container[key as string];
    } else if (action < 0.3) {
      // Move a real value to a wrong place: a plausible shape in an implausible spot.
      const [otherContainer, otherKey] = pick(all, random);
      (container as Body)[key] = structuredClone((otherContainer as Body)[otherKey]);
    } else if (action < 0.4 && !Array.isArray(container)) {
      container[pick([...format.keys, '__proto__'], random)] = pick(hostile, random)();
    } else {
      (container as Body)[key] = pick(hostile, random)();
    }
  };
}

/**
 * Feeds `rounds` mutations of `seeds` to `validate` and asserts that it either accepts or throws
 * a 400 GatewayError naming a field path, never anything else, and that both outcomes occur (or
 * the mutations are not exercising the validator).
 */
export function assertOnlyRefusals(options: {
  validate(body: unknown): unknown;
  seeds: Body[];
  mutate(body: Body, random: () => number): void;
  seed: number;
  rounds: number;
}): void {
  const random = seededRandom(options.seed);
  let accepted = 0;
  let refused = 0;
  for (let round = 0; round < options.rounds; round++) {
    const body = structuredClone(options.seeds[round % options.seeds.length]) as Body;
    const mutations = 1 + Math.floor(random() * 3);
    for (let m = 0; m < mutations; m++) options.mutate(body, random);
    try {
      options.validate(body);
      accepted++;
    } catch (err) {
      if (!(err instanceof GatewayError)) {
        assert.fail(`round ${round} threw ${String(err)} for ${JSON.stringify(body).slice(0, 500)}`);
      }
      assert.equal(err.status, 400);
      assert.match(err.message, /^[a-z_]+(\.[a-z_0-9]+)*: \S/);
      refused++;
    }
  }
  assert.ok(accepted > 100, `accepted ${accepted}`);
  assert.ok(refused > 1000, `refused ${refused}`);
}

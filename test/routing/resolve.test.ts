import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileGlob, createResolver } from '../../src/routing/resolve.ts';
import type { RouteInput } from '../../src/routing/resolve.ts';
import type { RoutingConfig } from '../../src/config/types.ts';
import type { RequestTraits } from '../../src/formats/traits.ts';
import { checkModelAllowed } from '../../src/auth/authenticate.ts';
import type { KeyRecord } from '../../src/auth/key-record.ts';
import type { GatewayError } from '../../src/common/errors.ts';

const MODELS = new Set(['qwen-local', 'gpt-5.4-mini', 'claude-sonnet-4-5', 'claude-opus', 'gemini-2.5-pro', 'gpt-4o']);

function input(fields: Partial<Omit<RouteInput, 'traits'>> & { traits?: Partial<RequestTraits> } = {}): RouteInput {
  const { traits, ...rest } = fields;
  return {
    clientFormat: 'messages',
    keyTier: 'basic',
    inputTokens: () => 1_000,
    ...rest,
    traits: () => ({ thinking: false, hasImages: false, hasTools: false, ...traits }),
  };
}

const ROUTING: RoutingConfig = {
  aliases: [
    { pattern: 'claude-3-5-haiku-*', target: 'qwen-local' },
    { pattern: 'gpt-4o', target: 'gpt-5.4-mini' },
    { pattern: 'claude-*', target: 'claude-sonnet-4-5' },
  ],
  routes: [
    { when: { model: 'claude-sonnet*', thinking: true }, model: 'claude-opus' },
    { when: { model: 'claude-*', input_tokens_over: 100_000 }, model: 'gemini-2.5-pro' },
    { when: { has_images: true, model: 'qwen-local' }, model: 'gpt-5.4-mini' },
  ],
};

describe('globs', () => {
  it('lets * match any run of characters, none included, and nothing else be special', () => {
    const match = compileGlob('claude-3-5-haiku-*');
    assert.ok(match('claude-3-5-haiku-20241022'));
    assert.ok(match('claude-3-5-haiku-'));
    assert.ok(!match('claude-3-5-sonnet-x'));
    assert.ok(!match('xclaude-3-5-haiku-1'));
    assert.ok(compileGlob('a*b*c')('aXXbYYc'));
    assert.ok(!compileGlob('a.b')('aXb'), 'a dot is a dot');
    assert.ok(compileGlob('(x)+[y]')('(x)+[y]'));
    assert.ok(compileGlob('*')('anything\nat all'));
  });
});

describe('aliases', () => {
  const isModel = (id: string): boolean => MODELS.has(id) && id !== 'gpt-4o';

  it('answers a globbed alias with its target, the answer naming the id asked for', () => {
    const resolver = createResolver({ routing: { aliases: ROUTING.aliases, routes: [] }, isModel });
    assert.deepEqual(resolver.resolve('claude-3-5-haiku-20241022', input()), {
      model: 'qwen-local', answerAs: 'claude-3-5-haiku-20241022', requested: 'claude-3-5-haiku-20241022', alias: 'claude-3-5-haiku-*',
    });
  });

  it('lets a real model id win over an alias, and the first matching alias in file order win among aliases', () => {
    const resolver = createResolver({ routing: { aliases: ROUTING.aliases, routes: [] }, isModel });
    assert.equal(resolver.resolve('claude-sonnet-4-5', input()).model, 'claude-sonnet-4-5');
    assert.equal(resolver.resolve('claude-3-5-haiku-x', input()).alias, 'claude-3-5-haiku-*');
    assert.equal(resolver.resolve('claude-2', input()).model, 'claude-sonnet-4-5');
  });

  it('applies an alias whose id names a model that is not usable now (no credentials)', () => {
    const resolver = createResolver({ routing: { aliases: ROUTING.aliases, routes: [] }, isModel });
    assert.equal(resolver.resolve('gpt-4o', input()).model, 'gpt-5.4-mini');
  });

  it('does not chain: an alias whose target matches another alias stops at the target', () => {
    const resolver = createResolver({ routing: { aliases: [{ pattern: 'a', target: 'b' }, { pattern: 'b', target: 'c' }], routes: [] }, isModel: () => false });
    assert.equal(resolver.resolve('a', input()).model, 'b');
  });

  it('leaves an unknown id as it is for the caller to answer 404', () => {
    const resolver = createResolver({ routing: ROUTING, isModel });
    assert.deepEqual(resolver.resolve('nothing-like-it', input()), { model: 'nothing-like-it', answerAs: 'nothing-like-it', requested: 'nothing-like-it' });
  });

  it('lists literal aliases only', () => {
    const resolver = createResolver({ routing: ROUTING, isModel });
    assert.deepEqual(resolver.literalAliases, [{ pattern: 'gpt-4o', target: 'gpt-5.4-mini' }]);
  });
});

describe('routes', () => {
  const isModel = (id: string): boolean => MODELS.has(id);
  const resolver = createResolver({ routing: ROUTING, isModel });

  it('picks the model of the first rule whose every condition holds, the answer naming that model', () => {
    assert.deepEqual(resolver.resolve('claude-sonnet-4-5', input({ traits: { thinking: true } })), {
      model: 'claude-opus', answerAs: 'claude-opus', requested: 'claude-sonnet-4-5', route: 0,
    });
    assert.equal(resolver.resolve('claude-sonnet-4-5', input({ traits: { thinking: true }, inputTokens: () => 200_000 })).route, 0, 'first match wins');
    assert.equal(resolver.resolve('claude-sonnet-4-5', input({ inputTokens: () => 200_000 })).model, 'gemini-2.5-pro');
    assert.equal(resolver.resolve('claude-sonnet-4-5', input({ inputTokens: () => 100_000 })).model, 'claude-sonnet-4-5', 'over, not at');
  });

  it('matches a rule\'s model glob on the id after aliases', () => {
    const r = resolver.resolve('claude-3-5-haiku-1', input({ traits: { hasImages: true } }));
    assert.deepEqual([r.model, r.alias, r.route, r.answerAs], ['gpt-5.4-mini', 'claude-3-5-haiku-*', 2, 'gpt-5.4-mini']);
    assert.equal(resolver.resolve('claude-3-5-haiku-1', input()).model, 'qwen-local');
  });

  it('checks tools, client format and key tier', () => {
    const routed = createResolver({
      routing: {
        aliases: [],
        routes: [
          { when: { has_tools: false, client_format: ['chat'] }, model: 'qwen-local' },
          { when: { key_tier: ['enterprise'] }, model: 'claude-opus' },
        ],
      },
      isModel,
    });
    assert.equal(routed.resolve('gpt-4o', input({ clientFormat: 'chat' })).model, 'qwen-local');
    assert.equal(routed.resolve('gpt-4o', input({ clientFormat: 'chat', traits: { hasTools: true } })).model, 'gpt-4o');
    assert.equal(routed.resolve('gpt-4o', input({ clientFormat: 'responses' })).model, 'gpt-4o');
    assert.equal(routed.resolve('gpt-4o', input({ keyTier: 'enterprise', clientFormat: 'responses' })).model, 'claude-opus');
  });

  it('reads the body\'s traits and the estimate at most once, and not at all when no rule needs them', () => {
    let traitReads = 0;
    let estimateReads = 0;
    const counted = input({ clientFormat: 'chat' });
    const watched: RouteInput = {
      ...counted,
      traits: () => {
        traitReads++;
        return counted.traits();
      },
      inputTokens: () => {
        estimateReads++;
        return 10;
      },
    };
    resolver.resolve('claude-sonnet-4-5', watched);
    assert.deepEqual([traitReads, estimateReads], [1, 1]);
    resolver.resolve('gpt-5.4-mini', watched);
    assert.deepEqual([traitReads, estimateReads], [1, 1], 'no rule\'s model glob matched: nothing else was read');
  });

  it('does nothing at all without aliases or routes', () => {
    const none = createResolver({ routing: undefined, isModel: () => assert.fail('not asked') });
    assert.deepEqual(none.resolve('x', input()), { model: 'x', answerAs: 'x', requested: 'x' });
  });
});

describe('a key limited to some models', () => {
  const record: KeyRecord = {
    id: 'key_0123456789abcdef', name: 'limited', hash: '0'.repeat(64), tier: 'basic', limits: {}, models: ['qwen-local'],
    admin: false, created_at: '2026-01-01T00:00:00.000Z', expires_at: null, revoked_at: null,
  };
  const resolver = createResolver({ routing: ROUTING, isModel: (id) => MODELS.has(id) });
  const allowed = (requested: string, fields: Parameters<typeof input>[0] = {}): boolean => {
    try {
      checkModelAllowed(record, resolver.resolve(requested, input(fields)).model, {});
      return true;
    } catch (error) {
      assert.equal((error as GatewayError).code, 'model_not_allowed');
      return false;
    }
  };

  it('reaches no other model through an alias or a route, the check being on the model that answers', () => {
    assert.equal(allowed('claude-3-5-haiku-1'), true, 'the alias lands on the model it may use');
    assert.equal(allowed('claude-3-5-haiku-1', { traits: { hasImages: true } }), false, 'a route to another model is refused');
    assert.equal(allowed('gpt-4o'), false, 'an alias to another model is refused');
    assert.equal(allowed('claude-sonnet-4-5'), false);
  });
});

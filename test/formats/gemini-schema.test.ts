import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { geminiSchemaToJsonSchema, jsonSchemaToGeminiSchema } from '../../src/formats/gemini-schema.ts';

describe('geminiSchemaToJsonSchema', () => {
  it('lower-cases the types of nested objects and arrays', () => {
    assert.deepEqual(
      geminiSchemaToJsonSchema({
        type: 'OBJECT',
        properties: {
          name: { type: 'STRING', description: 'Who' },
          scores: { type: 'ARRAY', items: { type: 'ARRAY', items: { type: 'NUMBER', format: 'double' } } },
          address: { type: 'OBJECT', properties: { zip: { type: 'INTEGER', format: 'int32' } }, required: ['zip'] },
          active: { type: 'BOOLEAN' },
        },
        required: ['name'],
      }),
      {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'Who' },
          scores: { type: 'array', items: { type: 'array', items: { type: 'number', format: 'double' } } },
          address: { type: 'object', properties: { zip: { type: 'integer', format: 'int32' } }, required: ['zip'] },
          active: { type: 'boolean' },
        },
        required: ['name'],
      },
    );
  });

  it('takes lower-case types as the API does (@ai-sdk/google sends them)', () => {
    assert.deepEqual(geminiSchemaToJsonSchema({ type: 'object', properties: { a: { type: 'string' } } }), { type: 'object', properties: { a: { type: 'string' } } });
  });

  it('turns nullable into a null type, and a null enum value', () => {
    assert.deepEqual(geminiSchemaToJsonSchema({ type: 'STRING', nullable: true }), { type: ['string', 'null'] });
    assert.deepEqual(geminiSchemaToJsonSchema({ type: 'STRING', format: 'enum', enum: ['a', 'b'], nullable: true }), { type: ['string', 'null'], enum: ['a', 'b', null] });
    assert.deepEqual(geminiSchemaToJsonSchema({ anyOf: [{ type: 'STRING' }, { type: 'INTEGER' }], nullable: true }), {
      anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }],
    });
  });

  it("drops format enum and reads an integer enum's strings as numbers", () => {
    assert.deepEqual(geminiSchemaToJsonSchema({ type: 'INTEGER', format: 'enum', enum: ['101', '201'] }), { type: 'integer', enum: [101, 201] });
    assert.deepEqual(geminiSchemaToJsonSchema({ type: 'STRING', enum: ['101'] }), { type: 'string', enum: ['101'] });
  });

  it('reads the int64 bounds the SDK sends as strings as numbers, and example as examples', () => {
    assert.deepEqual(geminiSchemaToJsonSchema({ type: 'ARRAY', minItems: '1', maxItems: '4', items: { type: 'STRING', maxLength: '10', pattern: '^a' }, example: ['a'] }), {
      type: 'array',
      minItems: 1,
      maxItems: 4,
      items: { type: 'string', maxLength: 10, pattern: '^a' },
      examples: [['a']],
    });
  });

  it('orders properties by propertyOrdering and leaves the keyword out', () => {
    const out = geminiSchemaToJsonSchema({ type: 'OBJECT', properties: { b: { type: 'STRING' }, a: { type: 'STRING' }, c: { type: 'STRING' } }, propertyOrdering: ['c', 'a', 'missing'] });
    assert.deepEqual(Object.keys(out['properties'] as object), ['c', 'a', 'b']);
    assert.equal('propertyOrdering' in out, false);
  });

  it('keeps keywords beyond the subset and converts their subschemas', () => {
    assert.deepEqual(geminiSchemaToJsonSchema({ type: 'OBJECT', additionalProperties: { type: 'STRING' }, oneOf: [{ type: 'OBJECT' }], $ref: '#/x', minimum: 0 }), {
      type: 'object',
      additionalProperties: { type: 'string' },
      oneOf: [{ type: 'object' }],
      $ref: '#/x',
      minimum: 0,
    });
  });

  it('leaves TYPE_UNSPECIFIED out and reads a non-object as no constraint', () => {
    assert.deepEqual(geminiSchemaToJsonSchema({ type: 'TYPE_UNSPECIFIED', description: 'x' }), { description: 'x' });
    assert.deepEqual(geminiSchemaToJsonSchema('OBJECT'), {});
  });
});

describe('jsonSchemaToGeminiSchema', () => {
  it('upper-cases types and keeps the subset as it is', () => {
    const warnings: string[] = [];
    assert.deepEqual(
      jsonSchemaToGeminiSchema({ type: 'object', title: 'T', properties: { q: { type: 'string', description: 'query', minLength: 1, pattern: '^x' }, n: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['q'] }, (m) => warnings.push(m)),
      { type: 'OBJECT', title: 'T', properties: { q: { type: 'STRING', description: 'query', minLength: '1', pattern: '^x' }, n: { type: 'INTEGER', minimum: 1, maximum: 9 } }, required: ['q'] },
    );
    assert.deepEqual(warnings, []);
  });

  it('turns null types and null anyOf members into nullable, and several types into anyOf', () => {
    assert.deepEqual(jsonSchemaToGeminiSchema({ type: ['string', 'null'] }), { type: 'STRING', nullable: true });
    assert.deepEqual(jsonSchemaToGeminiSchema({ anyOf: [{ type: 'null' }, { type: 'array', items: { type: 'string' } }], description: 'tags' }), {
      nullable: true,
      description: 'tags',
      type: 'ARRAY',
      items: { type: 'STRING' },
    });
    assert.deepEqual(jsonSchemaToGeminiSchema({ type: ['string', 'integer'] }), { anyOf: [{ type: 'STRING' }, { type: 'INTEGER' }] });
    assert.deepEqual(jsonSchemaToGeminiSchema({ oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'null' }] }), { nullable: true, anyOf: [{ type: 'STRING' }, { type: 'NUMBER' }] });
  });

  it('makes enums and const string enums', () => {
    assert.deepEqual(jsonSchemaToGeminiSchema({ type: 'integer', enum: [1, 2, null] }), { type: 'INTEGER', enum: ['1', '2'], format: 'enum', nullable: true });
    assert.deepEqual(jsonSchemaToGeminiSchema({ const: 'on' }), { enum: ['on'], format: 'enum' });
  });

  it('inlines local references and cuts a cycle with a warning', () => {
    const warnings: string[] = [];
    const schema = {
      type: 'object',
      properties: { home: { $ref: '#/$defs/address' }, node: { $ref: '#/definitions/node' } },
      $defs: { address: { type: 'object', properties: { city: { type: 'string' } } } },
      definitions: { node: { type: 'object', properties: { next: { $ref: '#/definitions/node' } } } },
    };
    assert.deepEqual(jsonSchemaToGeminiSchema(schema, (m) => warnings.push(m)), {
      type: 'OBJECT',
      properties: {
        home: { type: 'OBJECT', properties: { city: { type: 'STRING' } } },
        node: { type: 'OBJECT', properties: { next: { type: 'OBJECT' } } },
      },
    });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /schema\.properties\.node\.properties\.next\.\$ref: .*refers to itself/);
  });

  it('stops inlining a schema whose definitions fan out, instead of growing without bound', () => {
    const $defs: Record<string, unknown> = { d0: { type: 'string' } };
    for (let i = 1; i <= 40; i++) $defs[`d${i}`] = { type: 'object', properties: { a: { $ref: `#/$defs/d${i - 1}` }, b: { $ref: `#/$defs/d${i - 1}` } } };
    const warnings: string[] = [];
    const out = jsonSchemaToGeminiSchema({ $ref: '#/$defs/d40', $defs }, (m) => warnings.push(m));
    assert.ok(JSON.stringify(out).length < 200_000);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /more than 256 references to inline/);
  });

  it('merges an allOf of objects', () => {
    assert.deepEqual(jsonSchemaToGeminiSchema({ allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { properties: { b: { type: 'number' } }, required: ['b'] }] }), {
      type: 'OBJECT',
      properties: { a: { type: 'STRING' }, b: { type: 'NUMBER' } },
      required: ['a', 'b'],
    });
  });

  it('drops what the subset cannot say, naming each keyword and its path', () => {
    const warnings: string[] = [];
    const out = jsonSchemaToGeminiSchema(
      { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', additionalProperties: false, properties: { n: { type: 'number', exclusiveMinimum: 0 } }, examples: [{ n: 1 }] },
      (m) => warnings.push(m),
      'tools.0.parameters',
    );
    assert.deepEqual(out, { type: 'OBJECT', properties: { n: { type: 'NUMBER' } }, example: { n: 1 } });
    assert.deepEqual(warnings, [
      'tools.0.parameters.additionalProperties: dropped, this Gemini upstream\'s schema subset has no "additionalProperties"',
      'tools.0.parameters.properties.n.exclusiveMinimum: dropped, this Gemini upstream\'s schema subset has no "exclusiveMinimum"',
    ]);
  });

  it('describes a tuple by its first item, with a warning', () => {
    const warnings: string[] = [];
    assert.deepEqual(jsonSchemaToGeminiSchema({ type: 'array', items: [{ type: 'string' }, { type: 'number' }] }, (m) => warnings.push(m)), { type: 'ARRAY', items: { type: 'STRING' } });
    assert.equal(warnings.length, 1);
  });
});

describe('schema round trips', () => {
  const subset = {
    type: 'OBJECT',
    description: 'A person',
    properties: {
      name: { type: 'STRING', minLength: '1' },
      nickname: { type: 'STRING', nullable: true },
      role: { type: 'STRING', format: 'enum', enum: ['admin', 'user'] },
      tags: { type: 'ARRAY', items: { type: 'STRING' }, maxItems: '5' },
      matrix: { type: 'ARRAY', items: { type: 'ARRAY', items: { type: 'INTEGER' } } },
      address: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] },
      either: { anyOf: [{ type: 'STRING' }, { type: 'NUMBER', minimum: 0 }] },
    },
    required: ['name', 'role'],
  };

  it("gives Google's subset back unchanged after a trip through JSON Schema", () => {
    const warnings: string[] = [];
    assert.deepEqual(jsonSchemaToGeminiSchema(geminiSchemaToJsonSchema(subset), (m) => warnings.push(m)), subset);
    assert.deepEqual(warnings, []);
  });

  it('gives a JSON Schema inside the subset back unchanged after a trip through Gemini', () => {
    const json = {
      type: 'object',
      properties: { q: { type: ['string', 'null'] }, n: { type: 'array', items: { type: 'integer' }, minItems: 1 }, o: { type: 'object', properties: { k: { type: 'boolean' } } } },
      required: ['q'],
    };
    assert.deepEqual(geminiSchemaToJsonSchema(jsonSchemaToGeminiSchema(json)), json);
  });
});

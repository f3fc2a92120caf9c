// pydantic v2-shaped 422 items from TypeBox schemas, against a schema shaped like the decision
// request (discriminated question union, nullable fields, bounded options, maps and lists).
import t from 'tap';
import { Type } from '@sinclair/typebox';
import { applyDefaults, compileBodyParser, compileValidator } from '../../src/api/validation.js';
import { parseJsonBody } from '../../src/api/json-body.js';
import { locateJsonError } from '../../src/api/json-syntax-error.js';
import { MAX_LISTED_PROBLEMS, TOO_MANY_ERRORS, valueError } from '../../src/decision/schema/problems.js';
import { ValidationFailure } from '../../src/api/errors.js';
import type { HttpRequest } from '../../src/api/route.js';
import { fakeRequest } from '../helpers/request.js';

const Text = Type.Union([Type.String(), Type.Record(Type.String(), Type.Unknown()), Type.Array(Type.Unknown()), Type.Null()]);
const Noul = Type.Object({
  type: Type.Optional(Type.Union([Type.Literal('noul'), Type.Literal('yes_no')], { default: 'noul' })),
  instructions: Type.Optional(Text),
  criteria: Type.Optional(Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()])),
});
const Choice = Type.Object({
  type: Type.Literal('choice'),
  instructions: Type.Optional(Text),
  criteria: Type.Union([
    Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]), { minProperties: 2, maxProperties: 4 }),
    Type.Array(Type.String(), { minItems: 2, maxItems: 4 }),
  ]),
});
const Score = Type.Object({
  type: Type.Literal('score'),
  instructions: Type.Optional(Text),
  criteria: Type.Array(Type.String(), { minItems: 2, maxItems: 10 }),
});
const Options = Type.Object({
  debias: Type.Optional(Type.Union([Type.Literal('permute'), Type.Literal('off')], { default: 'off' })),
  debias_passes: Type.Optional(Type.Integer({ minimum: 2, maximum: 8, default: 4 })),
  return_raw_probabilities: Type.Optional(Type.Boolean({ default: false })),
  temperature: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 2 })),
});
const Request = Type.Object({
  model: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  state: Type.Union([Type.String(), Type.Record(Type.String(), Type.Unknown()), Type.Array(Type.Unknown())]),
  questions: Type.Record(Type.String(), Type.Union([Noul, Choice, Score]), { minProperties: 1 }),
  options: Type.Optional(Type.Union([Options, Type.Null()])),
  use_case: Type.Optional(Type.String({ minLength: 10, maxLength: 20 })),
});
const Strict = Type.Object({ a: Type.String() }, { additionalProperties: false });

const validate = compileValidator(Request);
const good = { state: 'ctx', questions: { q1: { type: 'noul' } } };

t.test('a valid body has no errors, unknown members included', async (t) => {
  t.same(validate(good), []);
  t.same(validate({ ...good, brand_new_field: { x: 1 }, questions: { q1: { type: 'score', criteria: ['lo', 'hi'], extra: 1 } } }), []);
  t.same(compileValidator(Strict)({ a: 'x', b: 2 }), [], 'additionalProperties: false does not make unknown members errors');
});

const cases: [string, unknown, unknown[]][] = [
  ['body not an object', [1, 2], [{ type: 'dict_type', loc: ['body'], msg: 'Input should be a valid dictionary', input: [1, 2] }]],
  [
    'missing required fields, all at once, input is the parent',
    {},
    [
      { type: 'missing', loc: ['body', 'state'], msg: 'Field required', input: {} },
      { type: 'missing', loc: ['body', 'questions'], msg: 'Field required', input: {} },
    ],
  ],
  [
    'model wrong type (nullable string)',
    { ...good, model: 5 },
    [{ type: 'string_type', loc: ['body', 'model'], msg: 'Input should be a valid string', input: 5 }],
  ],
  [
    'state of no accepted kind lists each kind once',
    { ...good, state: 12 },
    [
      { type: 'string_type', loc: ['body', 'state'], msg: 'Input should be a valid string', input: 12 },
      { type: 'dict_type', loc: ['body', 'state'], msg: 'Input should be a valid dictionary', input: 12 },
      { type: 'list_type', loc: ['body', 'state'], msg: 'Input should be a valid list', input: 12 },
    ],
  ],
  [
    'questions not a map',
    { state: 's', questions: ['a'] },
    [{ type: 'dict_type', loc: ['body', 'questions'], msg: 'Input should be a valid dictionary', input: ['a'] }],
  ],
  [
    'empty questions map',
    { state: 's', questions: {} },
    [
      {
        type: 'too_short',
        loc: ['body', 'questions'],
        msg: 'Dictionary should have at least 1 item after validation, not 0',
        input: {},
        ctx: { field_type: 'Dictionary', min_length: 1, actual_length: 0 },
      },
    ],
  ],
  [
    'unknown question type is a literal_error at the type field',
    { state: 's', questions: { q1: { type: 'maybe' } } },
    [
      {
        type: 'literal_error',
        loc: ['body', 'questions', 'q1', 'type'],
        msg: "Input should be 'noul', 'yes_no', 'choice' or 'score'",
        input: 'maybe',
        ctx: { expected: "'noul', 'yes_no', 'choice' or 'score'" },
      },
    ],
  ],
  [
    'the discriminator picks the branch: choice without criteria',
    { state: 's', questions: { q1: { type: 'choice' } } },
    [{ type: 'missing', loc: ['body', 'questions', 'q1', 'criteria'], msg: 'Field required', input: { type: 'choice' } }],
  ],
  [
    'score criteria too short (list)',
    { state: 's', questions: { s: { type: 'score', criteria: ['only'] } } },
    [
      {
        type: 'too_short',
        loc: ['body', 'questions', 's', 'criteria'],
        msg: 'List should have at least 2 items after validation, not 1',
        input: ['only'],
        ctx: { field_type: 'List', min_length: 2, actual_length: 1 },
      },
    ],
  ],
  [
    'array positions are integers in loc',
    { state: 's', questions: { s: { type: 'score', criteria: ['a', 7, 'c'] } } },
    [{ type: 'string_type', loc: ['body', 'questions', 's', 'criteria', 1], msg: 'Input should be a valid string', input: 7 }],
  ],
  [
    'choice criteria map too long picks the map branch',
    { state: 's', questions: { c: { type: 'choice', criteria: { a: null, b: null, c: null, d: null, e: null } } } },
    [
      {
        type: 'too_long',
        loc: ['body', 'questions', 'c', 'criteria'],
        msg: 'Dictionary should have at most 4 items after validation, not 5',
        input: { a: null, b: null, c: null, d: null, e: null },
        ctx: { field_type: 'Dictionary', max_length: 4, actual_length: 5 },
      },
    ],
  ],
  [
    'debias literal',
    { ...good, options: { debias: 'shuffle' } },
    [
      {
        type: 'literal_error',
        loc: ['body', 'options', 'debias'],
        msg: "Input should be 'permute' or 'off'",
        input: 'shuffle',
        ctx: { expected: "'permute' or 'off'" },
      },
    ],
  ],
  [
    'debias_passes below the minimum',
    { ...good, options: { debias_passes: 1 } },
    [{ type: 'greater_than_equal', loc: ['body', 'options', 'debias_passes'], msg: 'Input should be greater than or equal to 2', input: 1, ctx: { ge: 2 } }],
  ],
  [
    'debias_passes above the maximum',
    { ...good, options: { debias_passes: 9 } },
    [{ type: 'less_than_equal', loc: ['body', 'options', 'debias_passes'], msg: 'Input should be less than or equal to 8', input: 9, ctx: { le: 8 } }],
  ],
  [
    'debias_passes fractional',
    { ...good, options: { debias_passes: 2.5 } },
    [
      {
        type: 'int_from_float',
        loc: ['body', 'options', 'debias_passes'],
        msg: 'Input should be a valid integer, got a number with a fractional part',
        input: 2.5,
      },
    ],
  ],
  [
    'debias_passes as a string',
    { ...good, options: { debias_passes: 'four' } },
    [
      {
        type: 'int_parsing',
        loc: ['body', 'options', 'debias_passes'],
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        input: 'four',
      },
    ],
  ],
  [
    'debias_passes as a boolean',
    { ...good, options: { debias_passes: true } },
    [{ type: 'int_type', loc: ['body', 'options', 'debias_passes'], msg: 'Input should be a valid integer', input: true }],
  ],
  [
    'return_raw_probabilities not a boolean',
    { ...good, options: { return_raw_probabilities: 3 } },
    [{ type: 'bool_type', loc: ['body', 'options', 'return_raw_probabilities'], msg: 'Input should be a valid boolean', input: 3 }],
  ],
  [
    'temperature not a number',
    { ...good, options: { temperature: [] } },
    [{ type: 'float_type', loc: ['body', 'options', 'temperature'], msg: 'Input should be a valid number', input: [] }],
  ],
  [
    'temperature exclusive minimum',
    { ...good, options: { temperature: 0 } },
    [{ type: 'greater_than', loc: ['body', 'options', 'temperature'], msg: 'Input should be greater than 0', input: 0, ctx: { gt: 0 } }],
  ],
  [
    'options of the wrong kind (nullable object)',
    { ...good, options: 'fast' },
    [{ type: 'dict_type', loc: ['body', 'options'], msg: 'Input should be a valid dictionary', input: 'fast' }],
  ],
  [
    'string too short',
    { ...good, use_case: 'short' },
    [{ type: 'string_too_short', loc: ['body', 'use_case'], msg: 'String should have at least 10 characters', input: 'short', ctx: { min_length: 10 } }],
  ],
  [
    'string too long',
    { ...good, use_case: 'x'.repeat(21) },
    [{ type: 'string_too_long', loc: ['body', 'use_case'], msg: 'String should have at most 20 characters', input: 'x'.repeat(21), ctx: { max_length: 20 } }],
  ],
  [
    'errors in several places are all reported',
    { state: 's', questions: { a: { type: 'score', criteria: 'x' }, b: { type: 'nope' } }, options: { debias_passes: 0, debias: 1 } },
    [
      { type: 'list_type', loc: ['body', 'questions', 'a', 'criteria'], msg: 'Input should be a valid list', input: 'x' },
      {
        type: 'literal_error',
        loc: ['body', 'questions', 'b', 'type'],
        msg: "Input should be 'noul', 'yes_no', 'choice' or 'score'",
        input: 'nope',
        ctx: { expected: "'noul', 'yes_no', 'choice' or 'score'" },
      },
      {
        type: 'literal_error',
        loc: ['body', 'options', 'debias'],
        msg: "Input should be 'permute' or 'off'",
        input: 1,
        ctx: { expected: "'permute' or 'off'" },
      },
      { type: 'greater_than_equal', loc: ['body', 'options', 'debias_passes'], msg: 'Input should be greater than or equal to 2', input: 0, ctx: { ge: 2 } },
    ],
  ],
];

for (const [name, body, expected] of cases) {
  t.test(name, async (t) => {
    t.same(validate(body), expected);
  });
}

t.test('keys with a slash or tilde survive the JSON-pointer round trip', async (t) => {
  const errors = validate({ state: 's', questions: { 'a/b~c': { type: 'score', criteria: 5 } } });
  t.same(
    errors.map((e) => e.loc),
    [['body', 'questions', 'a/b~c', 'criteria']],
  );
});

t.test('the loc prefix is configurable', async (t) => {
  const v = compileValidator(Type.Object({ key_id: Type.String({ minLength: 3 }) }), ['path']);
  t.same(v({ key_id: 'ab' })[0]?.loc, ['path', 'key_id']);
});

function req(body: string): HttpRequest {
  return fakeRequest({}, { method: 'POST', body: Buffer.from(body), ip: '' });
}

function failure(fn: () => unknown): unknown[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationFailure) return err.detail;
    throw err;
  }
  throw new Error('did not fail');
}

t.test('parseJsonBody', async (t) => {
  t.same(parseJsonBody(req('{"a":[1,2]}')), { a: [1, 2] });
  t.same(
    failure(() => parseJsonBody(req(''))),
    [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }],
  );
  t.equal(parseJsonBody(req('  '), { optional: true }), undefined);
  t.same(
    failure(() => parseJsonBody(req('{"a": }'))),
    [{ type: 'json_invalid', loc: ['body', 6], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }],
  );
});

t.test('locateJsonError speaks like Python json', async (t) => {
  t.same(locateJsonError('{'), { pos: 1, reason: 'Expecting property name enclosed in double quotes' });
  t.same(locateJsonError("{'a': 1}"), { pos: 1, reason: 'Expecting property name enclosed in double quotes' });
  t.same(locateJsonError('{"a" 1}'), { pos: 5, reason: "Expecting ':' delimiter" });
  t.same(locateJsonError('{"a": 1 "b": 2}'), { pos: 8, reason: "Expecting ',' delimiter" });
  t.same(locateJsonError('[1, 2,]'), { pos: 6, reason: 'Expecting value' });
  t.same(locateJsonError('{"a": "b'), { pos: 6, reason: 'Unterminated string starting at' });
  t.same(locateJsonError('{} x'), { pos: 3, reason: 'Extra data' });
  t.same(locateJsonError('"a\\qb"'), { pos: 2, reason: 'Invalid \\escape' });
  t.same(locateJsonError('nul'), { pos: 0, reason: 'Expecting value' });
});

t.test('defaults reach the handler and unknown members do not', async (t) => {
  const parse = compileBodyParser(Request);
  const out = parse(req(JSON.stringify({ state: 's', questions: { q: {} }, options: {}, surprise: 1 })));
  t.same(out, { state: 's', questions: { q: { type: 'noul' } }, options: { debias: 'off', debias_passes: 4, return_raw_probabilities: false } });
  t.notOk('surprise' in (out as object));
  t.same(applyDefaults(Options, {}), { debias: 'off', debias_passes: 4, return_raw_probabilities: false });
  t.same(
    failure(() => parse(req('{"state": 1, "questions": {}}'))).map((e) => (e as { type: string }).type),
    ['string_type', 'dict_type', 'list_type', 'too_short'],
  );
});

t.test('valueError for rules beyond the schema', async (t) => {
  t.same(valueError(['body', 'questions', 'c', 'criteria'], 'a choice needs 2 to 255 labels', ['a']), {
    type: 'value_error',
    loc: ['body', 'questions', 'c', 'criteria'],
    msg: 'Value error, a choice needs 2 to 255 labels',
    input: ['a'],
    ctx: { error: 'a choice needs 2 to 255 labels' },
  });
});

t.test('the error walk stops where the list a 422 sends does', async (t) => {
  const cpu = (fn: () => void): number => {
    const before = process.cpuUsage();
    fn();
    const used = process.cpuUsage(before);
    return (used.user + used.system) / 1e6;
  };
  const manyQuestions = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`q${i}`, { type: 'x' }]));
  const missingMembers = Array.from({ length: 60_000 }, () => ({}));
  const checkStrict = compileValidator(Type.Array(Strict));
  const checks: [string, () => unknown[]][] = [
    // Each element breaks both array branches of the union: a walk of all of them translated 200,000 errors per branch.
    ['200,000 bad labels', () => validate({ state: 's', questions: { q: { type: 'choice', criteria: Array(200_000).fill(1) } } })],
    ['50,000 questions of no known type', () => validate({ state: 's', questions: manyQuestions })],
    // Every error's path runs through the long name, which translating one copies.
    [
      '100,000 bad items under a name of 500,000 characters',
      () => validate({ state: 's', questions: { ['K'.repeat(500_000)]: { type: 'score', criteria: Array(100_000).fill(1) } } }),
    ],
    ['60,000 objects missing their required member', () => checkStrict(missingMembers)],
  ];
  for (const [what, check] of checks) {
    let errors: unknown[] = [];
    const used = cpu(() => (errors = check()));
    t.equal(errors.length, MAX_LISTED_PROBLEMS + 1, `${what}: as many as a 422 lists, and one more`);
    t.match(errors.at(-1), { type: TOO_MANY_ERRORS, ctx: { omitted: 1, checking_stopped: true } }, `${what}: which says that checking stopped`);
    t.ok(used < 1, `${what}: ${used.toFixed(3)} s of CPU`);
  }
});

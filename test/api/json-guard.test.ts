// The checks a JSON body gets beyond JSON.parse: strict UTF-8, well-formed strings and names, and
// the nesting bound, on their own and through parseJson's 422.
import t from 'tap';
import { decodeUtf8, findJsonFault, MAX_JSON_DEPTH, TOO_DEEP } from '../../src/api/json-guard.js';
import { parseJson } from '../../src/api/json-body.js';
import { ValidationFailure, type ValidationErrorItem } from '../../src/api/errors.js';

/** `levels` arrays around a string: a value whose depth is `levels`. */
function arrays(levels: number): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}

function refusal(bytes: Buffer | string): ValidationErrorItem {
  try {
    parseJson(Buffer.from(bytes));
  } catch (err) {
    if (err instanceof ValidationFailure && err.detail.length === 1) return err.detail[0]!;
    throw err;
  }
  throw new Error('expected a 422');
}

t.test('decodeUtf8 takes UTF-8 and nothing else', async (t) => {
  t.equal(decodeUtf8(Buffer.from('{"a":"é😀"}')), '{"a":"é😀"}');
  t.equal(decodeUtf8(Buffer.from([0x7b, 0xff, 0x7d])), null, 'a byte that never starts a character');
  t.equal(decodeUtf8(Buffer.from([0xc3])), null, 'a truncated sequence');
  t.equal(decodeUtf8(Buffer.from([0xc0, 0xaf])), null, 'an overlong encoding');
  t.equal(decodeUtf8(Buffer.from([0xed, 0xa0, 0x80])), null, 'an encoded surrogate');
  t.equal(decodeUtf8(Buffer.from([0xef, 0xbb, 0xbf, 0x31])), '\ufeff1', 'a BOM is kept, so JSON.parse refuses it as before');
});

t.test('findJsonFault bounds depth at MAX_JSON_DEPTH, the body counting as one', async (t) => {
  t.equal(findJsonFault(arrays(MAX_JSON_DEPTH)), null);
  t.same(findJsonFault(arrays(MAX_JSON_DEPTH + 1)), { path: Array(MAX_JSON_DEPTH).fill(0), reason: TOO_DEEP });
  t.same(findJsonFault({ a: [1, { b: arrays(MAX_JSON_DEPTH - 3) }] }), null, 'objects and arrays count alike');
  t.same(findJsonFault({ a: [1, { b: arrays(MAX_JSON_DEPTH - 2) }] })?.path.slice(0, 3), ['a', 1, 'b']);
  t.equal(findJsonFault(arrays(1_000_000))?.reason, TOO_DEEP, 'a million levels are refused without recursion');
  t.equal(findJsonFault(JSON.parse('[' + '1,'.repeat(100_000) + '1]')), null, 'breadth is not depth');
});

t.test('findJsonFault finds lone surrogates in strings and member names', async (t) => {
  t.equal(findJsonFault({ s: '\ud83d\ude00', [String.fromCodePoint(0x1f600)]: 1 }), null, 'pairs are fine');
  t.same(findJsonFault({ a: ['ok', 'x\ud800'] }), { path: ['a', 1], reason: 'a string holds a lone UTF-16 surrogate' });
  t.same(findJsonFault({ a: { '\udc00': 1 } }), { path: ['a'], reason: 'a member name holds a lone UTF-16 surrogate' });
  t.same(findJsonFault('\ud800'), { path: [], reason: 'a string holds a lone UTF-16 surrogate' });
});

t.test('parseJson answers each with json_invalid', async (t) => {
  t.same(refusal(Buffer.from([0x22, 0xff, 0x22])), {
    type: 'json_invalid',
    loc: ['body'],
    msg: 'JSON decode error',
    input: {},
    ctx: { error: 'the body is not valid UTF-8' },
  });
  t.same(refusal('{"a":["\\ud800"]}').loc, ['body', 'a', 0]);
  t.same(refusal('{"\\udfff":1}').loc, ['body']);
  t.match(refusal(JSON.stringify({ s: arrays(MAX_JSON_DEPTH) })), { type: 'json_invalid', ctx: { error: TOO_DEEP } });
  t.same(parseJson(Buffer.from(JSON.stringify({ s: arrays(MAX_JSON_DEPTH - 1) }))), { s: arrays(MAX_JSON_DEPTH - 1) });
  // Malformed and deep: the scanner that locates the fault stops at the same depth.
  t.same(refusal('['.repeat(200_000)).loc, ['body', MAX_JSON_DEPTH]);
  t.same(refusal('['.repeat(10) + '}').ctx, { error: 'Expecting value' }, 'a fault above the limit is reported as before');
});

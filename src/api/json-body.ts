// JSON request bodies: bytes to a value, or the 422 FastAPI would give for them.
import { ValidationFailure, type Loc } from '../decision/schema/problems.js';
import { decodeUtf8, findJsonFault } from './json-guard.js';
import { locateJsonError } from './json-syntax-error.js';
import type { HttpRequest } from './route.js';

/**
 * Parses the request body as JSON. A malformed body is FastAPI's `json_invalid` with the character
 * position of the fault; an empty body is `missing` unless `optional` (then undefined).
 */
export function parseJsonBody(req: HttpRequest, opts: { optional?: boolean } = {}): unknown {
  return parseJson(req.body, opts);
}

/**
 * JSON bytes → value, or the 422 FastAPI would give: missing when empty, json_invalid with a
 * position when malformed. Bytes that are not UTF-8, a lone surrogate in a string or member name
 * and nesting past MAX_JSON_DEPTH are json_invalid too (at ["body"] or the path of the value), so
 * nothing after this sees text it cannot encode or a value it cannot walk.
 */
export function parseJson(bytes: Buffer, opts: { optional?: boolean } = {}): unknown {
  const text = decodeUtf8(bytes);
  if (text === null) throw jsonInvalid(['body'], 'the body is not valid UTF-8');
  if (text.trim() === '') {
    if (opts.optional) return undefined;
    throw new ValidationFailure([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const fault = locateJsonError(text);
    throw jsonInvalid(['body', fault.pos], fault.reason);
  }
  const fault = findJsonFault(value);
  if (fault) throw jsonInvalid(['body', ...fault.path], fault.reason);
  return value;
}

function jsonInvalid(loc: Loc, reason: string): ValidationFailure {
  return new ValidationFailure([{ type: 'json_invalid', loc, msg: 'JSON decode error', input: {}, ctx: { error: reason } }]);
}

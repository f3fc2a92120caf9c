// Request validation with pydantic v2's error vocabulary, so clients of the third-party API see the
// 422 bodies they already parse. Schemas are compiled once with TypeBox's TypeCompiler; only a
// failing value pays for walking TypeBox's errors and translating them.
import { Kind, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError, type ValueErrorIterator } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import { ValidationFailure, type Loc, type ValidationErrorItem } from '../decision/schema/problems.js';
import { decodeUtf8, findJsonFault, MAX_JSON_DEPTH, TOO_DEEP } from './json-guard.js';
import type { HttpRequest } from './route.js';

export type Validator = (value: unknown) => ValidationErrorItem[];

// ---------------------------------------------------------------------------------------------
// JSON bodies

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

/**
 * Finds where and why JSON.parse failed, in the words of Python's json module (which FastAPI
 * reports), since V8's messages do not always carry a position.
 */
export function locateJsonError(text: string): { pos: number; reason: string } {
  let i = 0;
  class Fault {
    constructor(
      readonly pos: number,
      readonly reason: string,
    ) {}
  }
  const ws = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const str = (): void => {
    const start = i;
    i++;
    for (;;) {
      if (i >= text.length) throw new Fault(start, 'Unterminated string starting at');
      const c = text[i]!;
      if (c === '"') {
        i++;
        return;
      }
      if (c < ' ') throw new Fault(i, 'Invalid control character at');
      if (c === '\\') {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) throw new Fault(i, 'Invalid \\uXXXX escape');
          i += 6;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) throw new Fault(i, 'Invalid \\escape');
        i += 2;
        continue;
      }
      i++;
    }
  };
  // Nesting is bounded before recursing, as for a body that parses, so a deep malformed body
  // cannot exhaust the stack of the very scanner that explains it.
  let depth = 0;
  const value = (): void => {
    ws();
    const c = text[i];
    if ((c === '{' || c === '[') && depth === MAX_JSON_DEPTH) throw new Fault(i, TOO_DEEP);
    depth++;
    scanValue(c);
    depth--;
  };
  const scanValue = (c: string | undefined): void => {
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') throw new Fault(i, 'Expecting property name enclosed in double quotes');
        str();
        ws();
        if (text[i] !== ':') throw new Fault(i, "Expecting ':' delimiter");
        i++;
        value();
        ws();
        if (text[i] === '}') {
          i++;
          return;
        }
        if (text[i] !== ',') throw new Fault(i, "Expecting ',' delimiter");
        i++;
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ']') {
          i++;
          return;
        }
        if (text[i] !== ',') throw new Fault(i, "Expecting ',' delimiter");
        i++;
      }
    }
    if (c === '"') return str();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i));
    if (!literal) throw new Fault(i, 'Expecting value');
    i += literal[0].length;
  };
  try {
    value();
    ws();
    if (i < text.length) return { pos: i, reason: 'Extra data' };
    // JSON.parse refused something the scanner accepted: blame the start.
    return { pos: 0, reason: 'Expecting value' };
  } catch (err) {
    if (err instanceof Fault) return { pos: err.pos, reason: err.reason };
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Validators

/**
 * Compiles `schema` once and returns a function listing every problem of a value in pydantic v2's
 * shape, locations prefixed by `prefix` (default ["body"]). An empty list means valid. Members
 * the schema does not name are never an error.
 */
export function compileValidator(schema: TSchema, prefix: Loc = ['body']): Validator {
  const checker = TypeCompiler.Compile(ignoreUnknownMembers(schema));
  return (value) => (checker.Check(value) ? [] : translate([...checker.Errors(value)], value, prefix));
}

/**
 * Fills TypeBox defaults into a copy of `value` and drops members the schema does not name, as
 * pydantic does; call it on a value that passed validation (or before, to let defaults count).
 */
export function applyDefaults<T extends TSchema>(schema: T, value: unknown): Static<T> {
  return Value.Default(defaultsView(schema), Value.Clone(value)) as Static<T>;
}

const defaultsViews = new WeakMap<TSchema, TSchema>();

// TypeBox only descends into a Record's values when the value schema has a `default`; a default of
// undefined never replaces a present value (JSON has no undefined), so it only opens the door.
function defaultsView(schema: TSchema): TSchema {
  let view = defaultsViews.get(schema);
  if (!view) {
    view = rewrite(schema, (node) => {
      const patterns = node.patternProperties as Record<string, Record<string, unknown>> | undefined;
      if (!patterns) return node;
      const out: Record<string | symbol, unknown> = { ...node, patternProperties: {} };
      for (const [key, inner] of Object.entries(patterns)) {
        (out.patternProperties as Record<string, unknown>)[key] = 'default' in inner ? inner : { ...inner, default: undefined };
      }
      return out;
    });
    defaultsViews.set(schema, view);
  }
  return view;
}

/** A deep copy of a schema (symbol keys kept) with `edit` applied to every node, children first. */
function rewrite(schema: TSchema, edit: (node: Record<string | symbol, unknown>) => Record<string | symbol, unknown>): TSchema {
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (!node || typeof node !== 'object') return node;
    const out: Record<string | symbol, unknown> = {};
    for (const key of Reflect.ownKeys(node)) out[key] = walk((node as Record<string | symbol, unknown>)[key]);
    return edit(out);
  };
  return walk(schema) as TSchema;
}

/** Removes members the schema does not name, so handlers never see them. */
export function dropUnknownMembers<T extends TSchema>(schema: T, value: Static<T>): Static<T> {
  return Value.Clean(schema, value) as Static<T>;
}

/**
 * The usual handler entry: parse the JSON body, apply defaults, validate, drop unknown members.
 * Throws ValidationFailure (422) with every problem at once.
 */
export function compileBodyParser<T extends TSchema>(schema: T): (req: HttpRequest) => Static<T> {
  const validate = compileValidator(schema);
  return (req) => {
    const raw = parseJsonBody(req);
    const defaulted = applyDefaults(schema, raw);
    const errors = validate(defaulted);
    if (errors.length > 0) throw new ValidationFailure(errors);
    return dropUnknownMembers(schema, defaulted);
  };
}

/** The handler entry for path parameters: checked against `schema`, problems located at ["path", name]. */
export function compileParamsParser<T extends TSchema>(schema: T): (req: HttpRequest) => Static<T> {
  const validate = compileValidator(schema, ['path']);
  return (req) => {
    const errors = validate(req.params);
    if (errors.length > 0) throw new ValidationFailure(errors);
    return req.params as Static<T>;
  };
}

/** A pydantic `value_error` for rules a schema cannot express (raised by handlers). */
// Pydantic ignores members it does not know; a schema written with additionalProperties: false
// would make them errors, so the compiled copy relaxes it.
function ignoreUnknownMembers(schema: TSchema): TSchema {
  return rewrite(schema, (node) => {
    if (node.additionalProperties !== false || !('properties' in node)) return node;
    const { additionalProperties: _dropped, ...rest } = node;
    return rest;
  });
}

// ---------------------------------------------------------------------------------------------
// Translation of TypeBox errors

function translate(errors: ValueError[], root: unknown, prefix: Loc): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  const missing: string[] = [];
  const seen = new Set<string>();
  const push = (item: ValidationErrorItem): void => {
    const key = `${JSON.stringify(item.loc)}|${item.type}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(item);
  };
  for (const e of errors) {
    // TypeBox also visits a missing property's schema with undefined; pydantic says only "missing".
    if (missing.some((p) => e.path === p || e.path.startsWith(`${p}/`))) continue;
    if (e.type === ValueErrorType.ObjectRequiredProperty) {
      missing.push(e.path);
      const segments = pointer(e.path);
      push({ type: 'missing', loc: [...prefix, ...toLoc(root, segments)], msg: 'Field required', input: at(root, segments.slice(0, -1)) });
      continue;
    }
    if (e.type === ValueErrorType.ObjectAdditionalProperties) continue;
    if (e.type === ValueErrorType.Union) {
      for (const item of fromUnion(e, root, prefix)) push(item);
      continue;
    }
    push(fromLeaf(e, root, prefix));
  }
  return out;
}

function fromUnion(e: ValueError, root: unknown, prefix: Loc): ValidationErrorItem[] {
  const variants = (e.schema.anyOf ?? []) as TSchema[];
  const branches = (): ValueError[][] => e.errors.map((it: ValueErrorIterator) => [...it]);
  const loc = [...prefix, ...toLoc(root, pointer(e.path))];
  const value = e.value;

  const literals = literalValues(variants);
  if (literals) return [literalError(loc, value, literals)];

  const discriminator = findDiscriminator(variants);
  if (discriminator && isPlainObject(value) && discriminator in value) {
    const tag = value[discriminator];
    const index = variants.findIndex((v) => (tagValues(v, discriminator) ?? []).includes(tag));
    if (index < 0) {
      const expected = variants.flatMap((v) => tagValues(v, discriminator) ?? []);
      return [literalError([...loc, discriminator], tag, expected)];
    }
    return translate(branches()[index]!, root, prefix);
  }

  // Nullable: when the value is not null, the null branch says nothing useful.
  const all = branches();
  const candidates = variants.map((_, i) => i).filter((i) => value === null || !isNull(variants[i]!));
  const sameKind = candidates.filter((i) => kindMatches(variants[i]!, value));
  if (sameKind.length > 0) {
    let best: ValidationErrorItem[] | null = null;
    for (const i of sameKind) {
      const items = translate(all[i]!, root, prefix);
      if (!best || items.length < best.length) best = items;
    }
    return best!;
  }
  // No branch of the value's kind: one type error per branch, like pydantic, minus the noise.
  const items: ValidationErrorItem[] = [];
  for (const i of candidates) {
    const first = all[i]![0];
    if (first) items.push(...translate([first], root, prefix).slice(0, 1));
  }
  return items;
}

function fromLeaf(e: ValueError, root: unknown, prefix: Loc): ValidationErrorItem {
  const loc = [...prefix, ...toLoc(root, pointer(e.path))];
  const s = e.schema as Record<string, unknown>;
  const input = e.value;
  const item = (type: string, msg: string, ctx?: Record<string, unknown>): ValidationErrorItem =>
    ctx ? { type, loc, msg, input, ctx } : { type, loc, msg, input };
  const T = ValueErrorType;
  switch (e.type) {
    case T.String:
      return item('string_type', 'Input should be a valid string');
    case T.StringMinLength:
      return item('string_too_short', `String should have at least ${plural(s.minLength as number, 'character')}`, { min_length: s.minLength });
    case T.StringMaxLength:
      return item('string_too_long', `String should have at most ${plural(s.maxLength as number, 'character')}`, { max_length: s.maxLength });
    case T.StringPattern:
      return item('string_pattern_mismatch', `String should match pattern '${String(s.pattern)}'`, { pattern: s.pattern });
    case T.StringFormat:
    case T.StringFormatUnknown: {
      const reason = s.format === 'email' ? 'value is not a valid email address' : `value is not a valid ${String(s.format)}`;
      return item('value_error', `Value error, ${reason}`, { error: reason });
    }
    case T.Integer:
      if (typeof input === 'string') return item('int_parsing', 'Input should be a valid integer, unable to parse string as an integer');
      if (typeof input === 'number' && Number.isFinite(input))
        return item('int_from_float', 'Input should be a valid integer, got a number with a fractional part');
      return item('int_type', 'Input should be a valid integer');
    case T.Number:
      if (typeof input === 'string') return item('float_parsing', 'Input should be a valid number, unable to parse string as a number');
      return item('float_type', 'Input should be a valid number');
    case T.Boolean:
      if (typeof input === 'string') return item('bool_parsing', 'Input should be a valid boolean, unable to interpret input');
      return item('bool_type', 'Input should be a valid boolean');
    case T.Null:
      return item('none_required', 'Input should be None');
    case T.IntegerMinimum:
    case T.NumberMinimum:
      return item('greater_than_equal', `Input should be greater than or equal to ${String(s.minimum)}`, { ge: s.minimum });
    case T.IntegerExclusiveMinimum:
    case T.NumberExclusiveMinimum:
      return item('greater_than', `Input should be greater than ${String(s.exclusiveMinimum)}`, { gt: s.exclusiveMinimum });
    case T.IntegerMaximum:
    case T.NumberMaximum:
      return item('less_than_equal', `Input should be less than or equal to ${String(s.maximum)}`, { le: s.maximum });
    case T.IntegerExclusiveMaximum:
    case T.NumberExclusiveMaximum:
      return item('less_than', `Input should be less than ${String(s.exclusiveMaximum)}`, { lt: s.exclusiveMaximum });
    case T.IntegerMultipleOf:
    case T.NumberMultipleOf:
      return item('multiple_of', `Input should be a multiple of ${String(s.multipleOf)}`, { multiple_of: s.multipleOf });
    case T.Object:
      return item('dict_type', 'Input should be a valid dictionary');
    case T.ObjectMinProperties:
      return sizeError(item, 'too_short', 'Dictionary', s.minProperties as number, Object.keys(input as object).length);
    case T.ObjectMaxProperties:
      return sizeError(item, 'too_long', 'Dictionary', s.maxProperties as number, Object.keys(input as object).length);
    case T.Array:
    case T.Tuple:
      return item('list_type', 'Input should be a valid list');
    case T.ArrayMinItems:
      return sizeError(item, 'too_short', 'List', s.minItems as number, (input as unknown[]).length);
    case T.ArrayMaxItems:
      return sizeError(item, 'too_long', 'List', s.maxItems as number, (input as unknown[]).length);
    case T.Literal:
      return literalError(loc, input, [s.const]);
    default:
      return item('value_error', `Value error, ${e.message}`, { error: e.message });
  }
}

function sizeError(
  item: (type: string, msg: string, ctx?: Record<string, unknown>) => ValidationErrorItem,
  type: 'too_short' | 'too_long',
  fieldType: 'List' | 'Dictionary',
  limit: number,
  actual: number,
): ValidationErrorItem {
  const bound = type === 'too_short' ? 'at least' : 'at most';
  return item(type, `${fieldType} should have ${bound} ${plural(limit, 'item')} after validation, not ${actual}`, {
    field_type: fieldType,
    [type === 'too_short' ? 'min_length' : 'max_length']: limit,
    actual_length: actual,
  });
}

function literalError(loc: Loc, input: unknown, expected: unknown[]): ValidationErrorItem {
  const shown = expected.map((v) => (typeof v === 'string' ? `'${v}'` : String(v)));
  const text = shown.length <= 1 ? (shown[0] ?? '') : `${shown.slice(0, -1).join(', ')} or ${shown[shown.length - 1]}`;
  return { type: 'literal_error', loc, msg: `Input should be ${text}`, input, ctx: { expected: text } };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

// ---------------------------------------------------------------------------------------------
// Schema and value helpers

function literalValues(variants: TSchema[]): unknown[] | null {
  if (variants.length === 0 || !variants.every((v) => 'const' in v)) return null;
  return variants.map((v) => v.const);
}

function tagValues(variant: TSchema, key: string): unknown[] | null {
  const prop = (variant.properties as Record<string, TSchema> | undefined)?.[key];
  if (!prop) return null;
  if ('const' in prop) return [prop.const];
  if (Array.isArray(prop.anyOf)) return literalValues(prop.anyOf as TSchema[]);
  return null;
}

/** A property every object branch pins to literal values: the union's tag (e.g. a question's type). */
function findDiscriminator(variants: TSchema[]): string | null {
  const objects = variants.filter((v) => !isNull(v));
  if (objects.length < 2 || !objects.every((v) => v.type === 'object' && v.properties)) return null;
  for (const key of Object.keys(objects[0]!.properties as object)) {
    if (objects.every((v) => tagValues(v, key) !== null)) return key;
  }
  return null;
}

function isNull(schema: TSchema): boolean {
  return schema.type === 'null' || schema[Kind] === 'Null';
}

function kindMatches(schema: TSchema, value: unknown): boolean {
  if ('const' in schema) return typeof schema.const === typeof value;
  switch (schema.type) {
    case 'object':
      return isPlainObject(value);
    case 'array':
      return Array.isArray(value);
    case 'string':
      return typeof value === 'string';
    case 'number':
    case 'integer':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    case 'null':
      return value === null;
    default:
      return Array.isArray(schema.anyOf) ? (schema.anyOf as TSchema[]).some((v) => kindMatches(v, value)) : true;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function pointer(path: string): string[] {
  if (path === '') return [];
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** JSON-pointer segments → loc, with array positions as numbers as pydantic writes them. */
function toLoc(root: unknown, segments: string[]): Loc {
  const loc: Loc = [];
  let node: unknown = root;
  for (const seg of segments) {
    if (Array.isArray(node)) {
      const index = Number(seg);
      loc.push(index);
      node = node[index];
    } else {
      loc.push(seg);
      node = isPlainObject(node) ? node[seg] : undefined;
    }
  }
  return loc;
}

function at(root: unknown, segments: string[]): unknown {
  let node: unknown = root;
  for (const seg of segments) {
    if (Array.isArray(node)) node = node[Number(seg)];
    else if (isPlainObject(node)) node = node[seg];
    else return undefined;
  }
  return node;
}

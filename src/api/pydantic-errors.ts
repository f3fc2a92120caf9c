// TypeBox's ValueErrors in pydantic v2's vocabulary (type, loc, msg, input, ctx), so clients of
// the third-party API see the 422 items they already parse. TypeBox finds errors lazily, one at a
// time; only as many are taken as a 422 can list, so a huge array of bad items costs no more to
// report than a short one.
import { Kind, type TSchema } from '@sinclair/typebox';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { MAX_LISTED_PROBLEMS, omittedProblems, type Loc, type ValidationErrorItem } from '../decision/schema/problems.js';

/** What one walk translated, and whether it stopped with errors still untranslated. */
interface Translated {
  items: ValidationErrorItem[];
  more: boolean;
}

/**
 * The problems TypeBox found in `root`, once each, at locations prefixed by `prefix`: at most
 * MAX_LISTED_PROBLEMS, then, when there were more, one item saying that checking stopped there.
 */
export function toPydanticErrors(errors: Iterable<ValueError>, root: unknown, prefix: Loc): ValidationErrorItem[] {
  const { items, more } = translate(errors, root, prefix, MAX_LISTED_PROBLEMS);
  return more ? [...items, omittedProblems(1, true, prefix.slice(0, 1))] : items;
}

function translate(errors: Iterable<ValueError>, root: unknown, prefix: Loc, limit: number): Translated {
  const out: ValidationErrorItem[] = [];
  const missing = new Set<string>();
  const seen = new Map<string, ValidationErrorItem[]>();
  const push = (item: ValidationErrorItem): void => {
    const key = dedupeKey(item);
    const same = seen.get(key);
    if (same?.some((other) => sameLoc(other.loc, item.loc))) return;
    if (same) same.push(item);
    else seen.set(key, [item]);
    out.push(item);
  };
  for (const e of errors) {
    if (out.length > limit) break;
    if (e.type === ValueErrorType.ObjectAdditionalProperties) continue;
    // TypeBox also visits a missing property's schema with undefined; pydantic says only "missing".
    if (underMissing(e.path, missing)) continue;
    if (e.type === ValueErrorType.ObjectRequiredProperty) {
      missing.add(e.path);
      const segments = pointer(e.path);
      push({ type: 'missing', loc: [...prefix, ...toLoc(root, segments)], msg: 'Field required', input: at(root, segments.slice(0, -1)) });
      continue;
    }
    if (e.type === ValueErrorType.Union) {
      const union = fromUnion(e, root, prefix, limit - out.length + 1);
      for (const item of union.items) push(item);
      if (union.more) return { items: out.slice(0, limit), more: true };
      continue;
    }
    push(fromLeaf(e, root, prefix));
  }
  return out.length > limit ? { items: out.slice(0, limit), more: true } : { items: out, more: false };
}

/**
 * Items with equal keys have the same type and locs alike in their first characters; an item is a
 * duplicate only when its loc is also equal in full. Keying on whole locs would copy a member name
 * of a megabyte into every key.
 */
function dedupeKey(item: ValidationErrorItem): string {
  return `${item.type}|${JSON.stringify(item.loc.map((part) => (typeof part === 'string' && part.length > 64 ? `${part.slice(0, 64)}|${part.length}` : part)))}`;
}

function sameLoc(a: Loc, b: Loc): boolean {
  return a.length === b.length && a.every((part, i) => part === b[i]);
}

/** Whether `path` is `missing`'s or lies below one of them: a walk from the path up, not over every missing one. */
function underMissing(path: string, missing: Set<string>): boolean {
  if (missing.size === 0) return false;
  for (let end = path.length; end > 0; end = path.lastIndexOf('/', end - 1)) {
    if (missing.has(path.slice(0, end))) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Unions

function fromUnion(e: ValueError, root: unknown, prefix: Loc, limit: number): Translated {
  const variants = (e.schema.anyOf ?? []) as TSchema[];
  const loc = [...prefix, ...toLoc(root, pointer(e.path))];
  const value = e.value;
  const one = (item: ValidationErrorItem): Translated => ({ items: [item], more: false });

  const literals = literalValues(variants);
  if (literals) return one(literalError(loc, value, literals));

  const discriminator = findDiscriminator(variants);
  if (discriminator && isPlainObject(value) && discriminator in value) {
    const tag = value[discriminator];
    const index = variants.findIndex((v) => (tagValues(v, discriminator) ?? []).includes(tag));
    if (index < 0) {
      const expected = variants.flatMap((v) => tagValues(v, discriminator) ?? []);
      return one(literalError([...loc, discriminator], tag, expected));
    }
    return translate(e.errors[index]!, root, prefix, limit);
  }

  // Nullable: when the value is not null, the null branch says nothing useful.
  const candidates = variants.map((_, i) => i).filter((i) => value === null || !isNull(variants[i]!));
  const sameKind = candidates.filter((i) => kindMatches(variants[i]!, value));
  if (sameKind.length > 0) {
    // The branch with the fewest problems, each walk stopping at the limit; a stopped one counts as the most.
    let best: Translated | null = null;
    for (const i of sameKind) {
      const found = translate(e.errors[i]!, root, prefix, limit);
      if (!best || size(found) < size(best)) best = found;
    }
    return best!;
  }
  // No branch of the value's kind: one type error per branch, like pydantic, minus the noise.
  const items: ValidationErrorItem[] = [];
  for (const i of candidates) {
    const first = e.errors[i]!.First();
    if (first) items.push(...translate([first], root, prefix, limit).items.slice(0, 1));
  }
  return { items, more: false };
}

function size(t: Translated): number {
  return t.more ? Infinity : t.items.length;
}

function literalValues(variants: TSchema[]): unknown[] | null {
  if (variants.length === 0 || !variants.every((v) => 'const' in v)) return null;
  return variants.map((v) => v.const as unknown);
}

function tagValues(variant: TSchema, key: string): unknown[] | null {
  const prop = (variant.properties as Record<string, TSchema> | undefined)?.[key];
  if (!prop) return null;
  if ('const' in prop) return [prop.const as unknown];
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

// ---------------------------------------------------------------------------------------------
// Leaves: one error of one value, worded by pydantic's error family

const T = ValueErrorType;

/** An item at the leaf's location with its input; ctx only where pydantic gives one. */
type ItemOf = (type: string, msg: string, ctx?: Record<string, unknown>) => ValidationErrorItem;

interface Leaf {
  type: ValueErrorType;
  /** The schema the value failed, read for the bound or pattern it broke. */
  schema: Record<string, unknown>;
  input: unknown;
  item: ItemOf;
}

function fromLeaf(e: ValueError, root: unknown, prefix: Loc): ValidationErrorItem {
  const loc = [...prefix, ...toLoc(root, pointer(e.path))];
  const input = e.value;
  const leaf: Leaf = {
    type: e.type,
    schema: e.schema as Record<string, unknown>,
    input,
    item: (type, msg, ctx) => (ctx ? { type, loc, msg, input, ctx } : { type, loc, msg, input }),
  };
  if (e.type === T.Literal) return literalError(loc, input, [leaf.schema.const]);
  return (
    stringError(leaf) ??
    scalarTypeError(leaf) ??
    boundError(leaf) ??
    containerError(leaf) ??
    leaf.item('value_error', `Value error, ${e.message}`, { error: e.message })
  );
}

/** string_type and the string constraints; a format is a value_error, as pydantic's validators raise it. */
function stringError({ type, schema: s, item }: Leaf): ValidationErrorItem | null {
  switch (type) {
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
    default:
      return null;
  }
}

/** A number, boolean or null of the wrong type: *_parsing for a string, which pydantic (lax) would have tried to parse. */
function scalarTypeError({ type, input, item }: Leaf): ValidationErrorItem | null {
  switch (type) {
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
    default:
      return null;
  }
}

/**
 * The numeric bounds, integers' and floats' alike: the schema keyword that sets one, the TypeBox
 * errors that break it, and pydantic's type, wording and ctx member for it.
 */
const BOUNDS = [
  { keyword: 'minimum', errors: [T.IntegerMinimum, T.NumberMinimum], type: 'greater_than_equal', words: 'greater than or equal to', ctx: 'ge' },
  { keyword: 'exclusiveMinimum', errors: [T.IntegerExclusiveMinimum, T.NumberExclusiveMinimum], type: 'greater_than', words: 'greater than', ctx: 'gt' },
  { keyword: 'maximum', errors: [T.IntegerMaximum, T.NumberMaximum], type: 'less_than_equal', words: 'less than or equal to', ctx: 'le' },
  { keyword: 'exclusiveMaximum', errors: [T.IntegerExclusiveMaximum, T.NumberExclusiveMaximum], type: 'less_than', words: 'less than', ctx: 'lt' },
  { keyword: 'multipleOf', errors: [T.IntegerMultipleOf, T.NumberMultipleOf], type: 'multiple_of', words: 'a multiple of', ctx: 'multiple_of' },
] as const;

/** A number past a bound or off a multiple. */
function boundError({ type, schema, item }: Leaf): ValidationErrorItem | null {
  const bound = BOUNDS.find((b) => (b.errors as readonly ValueErrorType[]).includes(type));
  if (!bound) return null;
  const limit = schema[bound.keyword];
  return item(bound.type, `Input should be ${bound.words} ${String(limit)}`, { [bound.ctx]: limit });
}

/** Objects (pydantic's dictionaries) and arrays (its lists): the wrong type, or too few or many members. */
function containerError({ type, schema: s, input, item }: Leaf): ValidationErrorItem | null {
  switch (type) {
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
    default:
      return null;
  }
}

function sizeError(item: ItemOf, type: 'too_short' | 'too_long', fieldType: 'List' | 'Dictionary', limit: number, actual: number): ValidationErrorItem {
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
// Locations: TypeBox's JSON pointers as pydantic's loc

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

/** The value at `segments` below `root`, or undefined where the path leaves it. */
function at(root: unknown, segments: string[]): unknown {
  let node: unknown = root;
  for (const seg of segments) {
    if (Array.isArray(node)) node = node[Number(seg)];
    else if (isPlainObject(node)) node = node[seg];
    else return undefined;
  }
  return node;
}

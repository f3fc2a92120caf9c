// Request validation with pydantic v2's error vocabulary, so clients of the third-party API see the
// 422 bodies they already parse. Schemas are compiled once with TypeBox's TypeCompiler; only a
// failing value pays for walking TypeBox's errors and translating them (in pydantic-errors.ts),
// and only for as many as a 422 lists.
import type { Static, TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { ValidationFailure, type Loc, type ValidationErrorItem } from '../decision/schema/problems.js';
import { parseJsonBody } from './json-body.js';
import { toPydanticErrors } from './pydantic-errors.js';
import type { HttpRequest } from './route.js';

export type Validator = (value: unknown) => ValidationErrorItem[];

/**
 * Compiles `schema` once and returns a function listing the problems of a value in pydantic v2's
 * shape (as many as a 422 lists, then one item saying that there are more), locations prefixed by
 * `prefix` (default ["body"]). An empty list means valid. Members the schema does not name are
 * never an error.
 */
export function compileValidator(schema: TSchema, prefix: Loc = ['body']): Validator {
  const checker = TypeCompiler.Compile(ignoreUnknownMembers(schema));
  return (value) => (checker.Check(value) ? [] : toPydanticErrors(checker.Errors(value), value, prefix));
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
 * Throws ValidationFailure (422) with the problems at once.
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

// Pydantic ignores members it does not know; a schema written with additionalProperties: false
// would make them errors, so the compiled copy relaxes it.
function ignoreUnknownMembers(schema: TSchema): TSchema {
  return rewrite(schema, (node) => {
    if (node.additionalProperties !== false || !('properties' in node)) return node;
    const { additionalProperties: _dropped, ...rest } = node;
    return rest;
  });
}

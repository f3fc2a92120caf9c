// Helpers the kinds share for reading criteria in every form the client may send them.
import type { Entry } from '../schema/entry.js';
import type { ValidationErrorItem } from '../schema/problems.js';

/** Text as is; objects and arrays as compact JSON; null stays null. */
export function renderEntry(entry: Entry | undefined): string | null {
  if (entry === null || entry === undefined) return null;
  return typeof entry === 'string' ? entry : JSON.stringify(entry);
}

/** Splits a criteria string: one item per line, or per comma when it is a single line. */
export function splitListing(text: string): string[] {
  const parts = text.includes('\n') ? text.split('\n') : text.split(',');
  return parts.map((p) => p.trim()).filter((p) => p.length > 0);
}

/**
 * How many labels or levels criteria in any of their forms hold, without rendering them: a count
 * check runs on this first and stops the walk it guards, so 100,000 labels cost one count.
 */
export function criteriaCount(criteria: unknown): number {
  if (criteria === null || criteria === undefined) return 0;
  if (typeof criteria === 'string') return splitListing(criteria).length;
  return Array.isArray(criteria) ? criteria.length : Object.keys(criteria).length;
}

/** A too_short / too_long error when `actual` is outside [min, max]; null otherwise. */
export function countError(
  rule: { kind: string; what: string; min: number; max: number },
  actual: number,
  loc: (string | number)[],
  input: unknown,
): ValidationErrorItem | null {
  const { min, max } = rule;
  const text = `A ${rule.kind} question needs ${min} to ${max} ${rule.what}`;
  if (actual < min) {
    return { type: 'too_short', loc, msg: `${text}; got ${actual}`, input, ctx: { field_type: 'List', min_length: min, actual_length: actual } };
  }
  if (actual > max) {
    return { type: 'too_long', loc, msg: `${text}; got ${actual}`, input, ctx: { field_type: 'List', max_length: max, actual_length: actual } };
  }
  return null;
}

/** "name - description", or the name alone. */
export function described(name: string, description: string | null): string {
  return description ? `${name} - ${description}` : name;
}

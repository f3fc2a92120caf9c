// Turns a structurally valid SystemOneRequest into the decision's own shape: every criteria form
// reduced to an ordered option list, options filled with their defaults, content rendered as text.
// The counting rules (2-255 labels, 2-10 levels, distinct labels) live here because they apply to
// the parsed option list, whatever form the client sent it in.
import type { ValidationErrorItem } from '../api/errors.js';
import { valueError } from '../api/validation.js';
import type { Entry } from '../api/schemas/common.js';
import { OPTION_DEFAULTS, type SystemOneOptions, type SystemOneRequest } from '../api/schemas/systemone.js';

export const CHOICE_LABELS = { min: 2, max: 255 } as const;
export const SCORE_LEVELS = { min: 2, max: 10 } as const;

export interface NoulSpec {
  kind: 'noul';
  name: string;
  instructions: string | null;
  /** What a yes / a no means, when the client described them. */
  yes: string | null;
  no: string | null;
}

export interface ChoiceSpec {
  kind: 'choice';
  name: string;
  instructions: string | null;
  options: { label: string; description: string | null }[];
}

export interface ScoreSpec {
  kind: 'score';
  name: string;
  instructions: string | null;
  /** Level i is score i; "" when the client gave no description. */
  levels: string[];
}

export type QuestionSpec = NoulSpec | ChoiceSpec | ScoreSpec;

export interface NormalisedRequest {
  model: string | null;
  /** The state as the model sees it. */
  state: string;
  questions: QuestionSpec[];
  options: Required<SystemOneOptions>;
}

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

function countError(
  kind: 'choice' | 'score',
  actual: number,
  loc: (string | number)[],
  input: unknown,
): ValidationErrorItem | null {
  const { min, max } = kind === 'choice' ? CHOICE_LABELS : SCORE_LEVELS;
  const what = kind === 'choice' ? 'labels' : 'levels';
  const rule = `A ${kind} question needs ${min} to ${max} ${what}`;
  if (actual < min) {
    return { type: 'too_short', loc, msg: `${rule}; got ${actual}`, input, ctx: { field_type: 'List', min_length: min, actual_length: actual } };
  }
  if (actual > max) {
    return { type: 'too_long', loc, msg: `${rule}; got ${actual}`, input, ctx: { field_type: 'List', max_length: max, actual_length: actual } };
  }
  return null;
}

function choiceOptions(criteria: unknown): { label: string; description: string | null }[] {
  if (criteria === null || criteria === undefined) return [];
  if (typeof criteria === 'string') return splitListing(criteria).map((label) => ({ label, description: null }));
  if (Array.isArray(criteria)) return criteria.map((label) => ({ label: String(label), description: null }));
  return Object.entries(criteria as Record<string, Entry>).map(([label, d]) => ({ label, description: renderEntry(d) }));
}

function scoreLevels(criteria: unknown): string[] {
  if (criteria === null || criteria === undefined) return [];
  if (typeof criteria === 'string') return splitListing(criteria);
  if (Array.isArray(criteria)) return criteria.map((d) => renderEntry(d as Entry) ?? '');
  // Keys that merely restate the index ("0", "1", ...) carry nothing; other keys name the level.
  return Object.entries(criteria as Record<string, Entry>).map(([key, d], i) => {
    const text = renderEntry(d);
    if (key === String(i)) return text ?? '';
    return text === null || text === '' ? key : `${key}: ${text}`;
  });
}

/**
 * One question that already passed its variant's schema → its spec, or every counting and
 * labelling problem of its criteria.
 */
export function normaliseQuestion(name: string, q: Record<string, unknown>): { spec?: QuestionSpec; errors: ValidationErrorItem[] } {
  const errors: ValidationErrorItem[] = [];
  const loc = ['body', 'questions', name, 'criteria'];
  const instructions = renderEntry(q.instructions as Entry | undefined);
  const type = (q.type ?? 'noul') as string;
  if (type === 'choice') {
    const options = choiceOptions(q.criteria);
    const bad = countError('choice', options.length, loc, q.criteria ?? null);
    if (bad) errors.push(bad);
    const seen = new Set<string>();
    for (const o of options) {
      if (o.label.trim() === '') errors.push(valueError(loc, 'choice labels must not be empty', q.criteria));
      else if (seen.has(o.label)) errors.push(valueError(loc, `choice labels must be distinct; "${o.label}" appears more than once`, q.criteria));
      seen.add(o.label);
    }
    return errors.length > 0 ? { errors } : { spec: { kind: 'choice', name, instructions, options }, errors };
  }
  if (type === 'score') {
    const levels = scoreLevels(q.criteria);
    const bad = countError('score', levels.length, loc, q.criteria ?? null);
    return bad ? { errors: [bad] } : { spec: { kind: 'score', name, instructions, levels }, errors };
  }
  const criteria = (q.criteria ?? null) as { true?: Entry; false?: Entry } | null;
  return { spec: { kind: 'noul', name, instructions, yes: renderEntry(criteria?.true), no: renderEntry(criteria?.false) }, errors };
}

/** Assembles a request whose questions are already normalised: options defaulted, state rendered. */
export function normaliseRequest(body: SystemOneRequest, questions: QuestionSpec[]): NormalisedRequest {
  const options: Required<SystemOneOptions> = { ...OPTION_DEFAULTS, ...body.options };
  return { model: body.model ?? null, state: renderEntry(body.state) ?? '', questions, options };
}

// Turns a structurally valid request into the decision's own shape: every question's criteria
// reduced by its kind, options filled with their defaults, the state rendered as text.
import { renderEntry } from './kinds/criteria.js';
import { isKindName, kindNamed, type KindName, type QuestionSpec } from './kinds/index.js';
import type { State } from './schema/entry.js';
import { OPTION_DEFAULTS, type DecisionOptions } from './schema/options.js';
import type { ValidationErrorItem } from './schema/problems.js';

/** What a request holds besides its questions, as far as deciding reads it. */
export interface RequestFrame {
  model?: string | null;
  state: State;
  options?: DecisionOptions | null;
}

export interface NormalisedRequest {
  model: string | null;
  /** The state as the model sees it. */
  state: string;
  questions: QuestionSpec[];
  options: Required<DecisionOptions>;
}

/** The kind a request's `type` selects: yes_no is noul, and so is a question without a type. */
function kindName(type: unknown): KindName {
  return isKindName(type) ? type : 'noul';
}

/**
 * One question that already passed its variant's schema → its spec, or every counting and
 * labelling problem of its criteria.
 */
export function normaliseQuestion(name: string, q: Record<string, unknown>): { spec?: QuestionSpec; errors: ValidationErrorItem[] } {
  return kindNamed(kindName(q.type)).normalise(name, q);
}

/** Assembles a request whose questions are already normalised: options defaulted, state rendered. */
export function normaliseRequest(body: RequestFrame, questions: QuestionSpec[]): NormalisedRequest {
  const options: Required<DecisionOptions> = { ...OPTION_DEFAULTS, ...body.options };
  return { model: body.model ?? null, state: renderEntry(body.state) ?? '', questions, options };
}

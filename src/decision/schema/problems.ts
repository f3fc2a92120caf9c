// How the decision domain reports a request it cannot answer: pydantic's validation items, so
// the API can send them as a 422 unchanged, whichever layer found the problem.

export interface ValidationErrorItem {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

export type Loc = (string | number)[];

/** Pydantic's value_error: a rule of ours, worded as the sentence it breaks. */
export function valueError(loc: Loc, message: string, input: unknown): ValidationErrorItem {
  return { type: 'value_error', loc, msg: `Value error, ${message}`, input, ctx: { error: message } };
}

/** Every problem found with a request at once; the API answers it with 422. */
export class ValidationFailure extends Error {
  readonly status = 422;
  constructor(readonly detail: ValidationErrorItem[]) {
    super(detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; '));
    this.name = 'ValidationFailure';
  }
}

// The labelled decision sets, bench/quality/cases.jsonl and the public sets' samples: loading,
// checking, and the true option of each question as an index into the options the decision layer
// normalised.
import fs from 'node:fs';
import { validateSystemOneRequest } from '../../src/api/schemas/systemone-validate.js';
import type { QuestionSpec } from '../../src/decision/kinds/index.js';

export type Truth = boolean | string | number;

export interface LabelledCase {
  id: string;
  domain: string;
  state: string;
  questions: Record<string, Record<string, unknown>>;
  truth: Record<string, Truth>;
}

/** The index of the true option: noul options are [yes, no]; choice by label; score by level. */
export function truthIndex(spec: QuestionSpec, truth: Truth): number {
  if (spec.kind === 'noul') {
    if (typeof truth !== 'boolean') throw new Error(`${spec.name}: a noul truth must be true or false`);
    return truth ? 0 : 1;
  }
  if (spec.kind === 'choice') {
    const i = spec.options.findIndex((o) => o.label === truth);
    if (i < 0) throw new Error(`${spec.name}: truth ${JSON.stringify(truth)} is not one of the labels`);
    return i;
  }
  if (spec.kind === 'box') throw new Error(`${spec.name}: box questions are not part of the labelled set`);
  if (typeof truth !== 'number' || !Number.isInteger(truth) || truth < 0 || truth >= spec.levels.length) {
    throw new Error(`${spec.name}: a score truth must be a level from 0 to ${spec.levels.length - 1}`);
  }
  return truth;
}

/** Every case, checked: the questions validate as an API request and every truth names an option. */
export function loadCases(file: string): LabelledCase[] {
  return checkCases(
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as LabelledCase),
  );
}

/** The cases, unchanged, once each has a unique id, questions that validate and a truth naming an option. */
export function checkCases(cases: LabelledCase[]): LabelledCase[] {
  const ids = new Set<string>();
  for (const c of cases) {
    if (ids.has(c.id)) throw new Error(`duplicate case id ${c.id}`);
    ids.add(c.id);
    const req = validateSystemOneRequest({ state: c.state, questions: c.questions });
    for (const spec of req.questions) {
      if (!(spec.name in c.truth)) throw new Error(`${c.id}: no truth for ${spec.name}`);
      truthIndex(spec, c.truth[spec.name]!);
    }
  }
  return cases;
}

/** The same case with every choice question's options listed in reverse order. */
export function reversedChoices(c: LabelledCase): LabelledCase {
  const questions = Object.fromEntries(
    Object.entries(c.questions).map(([name, q]) => {
      if (q.type !== 'choice') return [name, q];
      const criteria = q.criteria;
      const reversed = Array.isArray(criteria)
        ? [...criteria].reverse()
        : typeof criteria === 'string'
          ? criteria
              .split(criteria.includes('\n') ? '\n' : ',')
              .reverse()
              .join(criteria.includes('\n') ? '\n' : ',')
          : Object.fromEntries(Object.entries(criteria as Record<string, unknown>).reverse());
      return [name, { ...q, criteria: reversed }];
    }),
  );
  return { ...c, questions };
}

// The labelled set bench:quality measures with: every case loads and validates as a request, every
// truth names an option, and the set keeps the shape the figures rely on (size, ranges, balance).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { loadCases, reversedChoices, truthIndex, type LabelledCase } from '../../bench/lib/cases.js';
import { validateSystemOneRequest } from '../../src/api/schemas/systemone-validate.js';
import type { QuestionSpec } from '../../src/decision/kinds/index.js';

const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'quality', 'cases.jsonl');
const cases = loadCases(file);
const specs = (c: LabelledCase): QuestionSpec[] => validateSystemOneRequest({ state: c.state, questions: c.questions }).questions;
const all = cases.flatMap((c) => specs(c).map((spec) => ({ c, spec, truth: truthIndex(spec, c.truth[spec.name]!) })));

t.test('the set is large enough and covers the ranges the API accepts', async (t) => {
  t.ok(all.length >= 300, `${all.length} questions`);
  const choices = all.flatMap(({ spec }) => (spec.kind === 'choice' ? [spec.options.length] : []));
  const levels = all.flatMap(({ spec }) => (spec.kind === 'score' ? [spec.levels.length] : []));
  t.equal(Math.min(...choices), 2);
  t.equal(Math.max(...choices), 20);
  t.equal(Math.min(...levels), 3);
  t.equal(Math.max(...levels), 10);
  t.same(new Set(cases.map((c) => c.domain)), new Set(['sentiment', 'routing', 'moderation', 'intent', 'urgency', 'factual', 'extraction']));
});

t.test('truths are balanced: yes/no near half, choice truths spread over positions', async (t) => {
  const noul = all.filter(({ spec }) => spec.kind === 'noul');
  const yes = noul.filter(({ truth }) => truth === 0).length / noul.length;
  t.ok(yes > 0.45 && yes < 0.55, `share of yes ${yes}`);
  const positions = all.flatMap(({ spec, truth }) => (spec.kind === 'choice' ? [truth / (spec.options.length - 1)] : []));
  const mean = positions.reduce((a, b) => a + b, 0) / positions.length;
  t.ok(mean > 0.4 && mean < 0.6, `mean relative position of the true option ${mean}`);
  t.ok(positions.filter((p) => p === 0).length < positions.length / 3, 'the first option is not usually the truth');
});

t.test('reversing a case reverses every choice list and keeps each truth on its label', async (t) => {
  for (const c of cases) {
    const reversed = reversedChoices(c);
    for (const [i, spec] of specs(reversed).entries()) {
      const before = specs(c)[i]!;
      if (spec.kind !== 'choice' || before.kind !== 'choice') continue;
      t.same(
        spec.options.map((o) => o.label),
        before.options.map((o) => o.label).reverse(),
        `${c.id} ${spec.name}`,
      );
      t.equal(spec.options[truthIndex(spec, c.truth[spec.name]!)]!.label, c.truth[spec.name]);
    }
  }
});

t.test('a truth that names no option is refused', async (t) => {
  const [first] = all.filter(({ spec }) => spec.kind === 'choice');
  t.throws(() => truthIndex(first!.spec, 'not-a-label'), /not one of the labels/);
  const [score] = all.filter(({ spec }) => spec.kind === 'score');
  t.throws(() => truthIndex(score!.spec, 99), /a score truth must be a level/);
});

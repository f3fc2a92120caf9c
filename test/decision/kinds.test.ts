// The question kinds as pure units: what each asks the model (its probes, rendered in one ordering
// of their answers), which answer tokens it reads, how the probes' distributions combine, and how
// a distribution becomes its typed answer.
import t from 'tap';
import { choice, choiceConfidence, type ChoiceSpec } from '../../src/decision/kinds/choice.js';
import type { Labels, QuestionKind, Reading, RenderContext, RenderedBranch } from '../../src/decision/kinds/kind.js';
import { noul, type NoulSpec } from '../../src/decision/kinds/noul.js';
import { fromThresholds, score, scoreConfidence, type ScoreSpec } from '../../src/decision/kinds/score.js';
import { box } from '../../src/decision/kinds/box.js';
import { MIRRORED, ROTATED } from '../../src/decision/debias.js';
import { isPreview } from '../../src/decision/kinds/index.js';
import { contextBlock, LAYOUT } from '../../src/decision/prompt.js';

const labels: Labels = {
  optionLabels: ['A', 'B', 'C', 'D'].map((label, i) => ({ label, tokens: [100 + i, 200 + i] })),
  digitLabels: '0123456789'.split('').map((label, i) => ({ label, tokens: [300 + i] })),
  yes: { label: 'Yes', tokens: [7, 17] },
  no: { label: 'No', tokens: [8, 18] },
};
const ctx: RenderContext = { labels, layout: LAYOUT };
const close = (a: number, b: number, eps = 1e-12) => Math.abs(a - b) < eps;

const ticket: ChoiceSpec = {
  kind: 'choice',
  name: 'secret_name_q1',
  instructions: 'What is this ticket about?',
  options: [
    { label: 'billing', description: 'money matters' },
    { label: 'technical', description: null },
    { label: 'other', description: null },
  ],
};

/** The branch of a kind that asks one probe, in one ordering; throwing unless it asks one with that many answers. */
function render<S>(kind: QuestionKind<S>, spec: S, ordering: number[], context: RenderContext): RenderedBranch {
  const probes = kind.probes(spec, context);
  if (probes.length !== 1 || probes[0]!.answers !== ordering.length) throw new Error(`expected one probe of ${ordering.length} answers`);
  return probes[0]!.render(ordering);
}

const reading = (p: number[], extra: Partial<Reading> = {}): Reading => ({ p, raw: null, debiasPasses: null, band: null, labelMass: 0.9, ...extra });

t.test('context block: the state on its own lines, ending at a newline', async (t) => {
  t.equal(contextBlock('I was charged twice.'), 'Context:\nI was charged twice.\n');
});

t.test('choice: letters in order, every spelling of each letter read, name hidden', async (t) => {
  const b = render(choice, ticket, [0, 1, 2], ctx);
  t.equal(
    b.text,
    'Question: What is this ticket about?\nOptions:\nA. billing - money matters\nB. technical\nC. other\nReply with only the letter of the best option.',
  );
  t.same(b.answers, [
    [100, 200],
    [101, 201],
    [102, 202],
  ]);
  t.notMatch(b.text, /secret_name_q1/);
  t.notMatch(b.text, /^\s/);
});

t.test('choice: a permuted ordering moves options, not letters', async (t) => {
  const b = render(choice, ticket, [2, 0, 1], ctx);
  t.match(b.text, 'A. other\nB. billing - money matters\nC. technical\n');
  t.same(
    b.answers,
    [
      [100, 200],
      [101, 201],
      [102, 202],
    ],
    'answers are the letters by position',
  );
});

t.test('choice: without instructions the body starts with the options', async (t) => {
  t.match(render(choice, { ...ticket, instructions: '  ' }, [0, 1, 2], ctx).text, /^Options:/);
});

t.test('choice answer: most probable label, reference confidence, raw and label mass passed through', async (t) => {
  const a = choice.answer(ticket, reading([0.2, 0.7, 0.1], { raw: [0.5, 0.4, 0.1], debiasPasses: 4, band: 'leaning' }));
  t.equal(a.choice, 'technical');
  t.same(a.probabilities, { billing: 0.2, technical: 0.7, other: 0.1 });
  t.same(a.raw_probabilities, { billing: 0.5, technical: 0.4, other: 0.1 });
  t.ok(close(a.confidence, (0.7 - 1 / 3) / (1 - 1 / 3)), String(a.confidence));
  t.equal(a.confidence_band, 'leaning');
  t.equal(a.debias_passes, 4);
  t.equal(a.label_mass, 0.9);
  t.equal(choice.answer(ticket, reading([0.2, 0.7, 0.1])).raw_probabilities, null);
});

t.test('choice confidence: 1 when certain, 0 when uniform, never negative', async (t) => {
  t.equal(choiceConfidence([1, 0, 0]), 1);
  t.ok(close(choiceConfidence([0.25, 0.25, 0.25, 0.25]), 0));
  t.equal(choiceConfidence([0.5, 0.5]), 0);
});

t.test("choice capacity is the model's option labels", async (t) => {
  t.equal(choice.capacity(ctx), 4);
  t.equal(choice.options(ticket), 3);
});

const stars: ScoreSpec = { kind: 'score', name: 's', instructions: 'How positive is it?', levels: ['awful', '', 'great'], legend: ['awful', '', 'great'] };

const digits: RenderContext = { labels, layout: { ...LAYOUT, scoreReadout: 'digits' } };

t.test('score (default layout): lettered descriptions, the level number where there is none', async (t) => {
  const b = render(score, stars, [1, 2, 0], ctx);
  t.equal(b.text, 'Question: How positive is it?\nOptions:\nA. 1\nB. great\nC. awful\nReply with only the letter of the best option.');
  t.same(
    b.answers,
    [
      [100, 200],
      [101, 201],
      [102, 202],
    ],
    'answers are the letters by position',
  );
  t.equal(score.capacity(ctx), 4, 'as many levels as the model has option letters');
});

t.test('score (digits layout): every level keeps its own digit, a permutation only moves lines', async (t) => {
  const b = render(score, stars, [1, 2, 0], digits);
  t.equal(
    b.text,
    'Question: How positive is it?\nLevels (0 = lowest, 2 = highest):\n1\n2 = great\n0 = awful\nReply with only the number of the best matching level.',
  );
  t.same(b.answers, [[301], [302], [300]], "the answer at each position is that level's digit");
  t.equal(score.capacity(digits), 10);
});

t.test('score (digits layout) falls back to letters on a vocabulary without single-token digits', async (t) => {
  const noDigits: RenderContext = { labels: { ...labels, digitLabels: [] }, layout: digits.layout };
  t.match(render(score, stars, [0, 1, 2], noDigits).text, /\nA\. awful\nB\. 1\nC\. great\n/);
  t.equal(score.capacity(noDigits), 4);
});

const ordinal: RenderContext = { labels, layout: { ...LAYOUT, scoreReadout: 'ordinal', scoreTemperature: 1 } };

t.test('score (ordinal layout): one yes/no probe per level above the lowest, all after the same question and scale', async (t) => {
  const probes = score.probes(stars, ordinal);
  t.equal(probes.length, 2, 'levels 1 and 2 are thresholds; level 0 is what is left');
  const [atLeast1, atLeast2] = probes.map((p) => p.render([0, 1]));
  const head = 'Question: How positive is it?\nScale, lowest to highest:\n- awful\n- 1\n- great\n';
  t.equal(atLeast1!.text, `${head}Is the answer "1" or higher on this scale?\nReply with only Yes or No.`);
  t.equal(atLeast2!.text, `${head}Is the answer "great" or higher on this scale?\nReply with only Yes or No.`);
  t.same(
    atLeast1!.answers,
    [
      [7, 17],
      [8, 18],
    ],
    'answer 0 is yes: P(level ≥ k)',
  );
  t.same(
    probes[0]!.render([1, 0]).answers,
    [
      [8, 18],
      [7, 17],
    ],
    'permute swaps the order yes and no are offered in',
  );
  t.equal(score.capacity(ordinal), 10, 'yes/no needs no label per level');
});

t.test('score: permute reads the scale both ways and pools in log space; a choice is rotated and averaged', async (t) => {
  const [levels] = score.probes(stars, ctx);
  t.equal(levels!.permutation, MIRRORED);
  t.same(levels!.permutation!.orderings(3, 4), [
    [0, 1, 2],
    [2, 1, 0],
    [0, 1, 2],
    [2, 1, 0],
  ]);
  t.equal(
    levels!.render([2, 1, 0]).text,
    'Question: How positive is it?\nOptions:\nA. great\nB. 1\nC. awful\nReply with only the letter of the best option.',
    'descending: the highest level first, letters in place',
  );
  const [options] = choice.probes(ticket, ctx);
  t.equal(options!.permutation ?? ROTATED, ROTATED, 'a choice keeps balanced rotations');
  const [thresholds] = score.probes(stars, ordinal);
  t.equal(thresholds!.permutation ?? ROTATED, ROTATED, 'a threshold is a yes/no: its answers swap');
});

t.test('score (ordinal layout): P(level ≥ k) differenced into a distribution, made monotone first', async (t) => {
  const p = score.combine(
    stars,
    [
      [0.8, 0.2],
      [0.3, 0.7],
    ],
    ordinal,
  );
  [0.2, 0.5, 0.3].forEach((x, i) => t.ok(close(p[i]!, x), `p[${i}] = ${p[i]} (expected ${x})`));
  const pooled = fromThresholds([0.3, 0.5, 0.1]);
  [0.6, 0, 0.3, 0.1].forEach((x, i) => t.ok(close(pooled[i]!, x), `a rise from 0.3 to 0.5 is pooled to 0.4 each: p[${i}] = ${pooled[i]}`));
  t.ok(
    close(
      pooled.reduce((a, b) => a + b, 0),
      1,
    ),
  );
});

t.test("score: the layout's temperature sharpens the read distribution, ranking kept", async (t) => {
  const sharp = score.combine(stars, [[0.2, 0.3, 0.5]], { labels, layout: { ...LAYOUT, scoreTemperature: 0.5 } });
  [0.04, 0.09, 0.25].forEach((x, i) => t.ok(close(sharp[i]!, x / 0.38), `p[${i}] ∝ pᵢ² at T = 0.5: ${sharp[i]}`));
  t.same(score.combine(stars, [[0.2, 0.3, 0.5]], { labels, layout: { ...LAYOUT, scoreTemperature: 1 } }), [0.2, 0.3, 0.5], 'T = 1 leaves it as read');
  // Chosen by held-out RPS (bench:score-readouts): the served layout serves the model's own distribution.
  t.same(score.combine(stars, [[0.2, 0.3, 0.5]], ctx), [0.2, 0.3, 0.5], 'the served layout leaves it as read');
});

t.test('score answer: the expected level, legend, reference confidence', async (t) => {
  const a = score.answer(stars, reading([0.1, 0.2, 0.7]));
  t.ok(close(a.score, 0.2 + 1.4), `Σ i·pᵢ = 1.6, got ${a.score}`);
  t.equal(score.answer(stars, reading([0.45, 0.1, 0.45])).score, 1, 'a split at the ends expects the middle, as the reference does');
  t.equal(score.answer(stars, reading([0, 0, 1])).score, 2);
  t.same(a.legend, { '0': 'awful', '1': '', '2': 'great' });
  t.same(Object.keys(a.probabilities), ['0', '1', '2']);
  // mode 2: Σ p|i−2| = 0.2 + 0.2 = 0.4; U(3) = (1 + 0 + 1)/3
  t.ok(close(a.confidence, 1 - 0.4 / (2 / 3)), String(a.confidence));
});

t.test('score confidence: 1 when certain, 0 for mass spread at the far ends', async (t) => {
  t.equal(scoreConfidence([0, 0, 1, 0, 0]), 1);
  t.equal(scoreConfidence([0.5, 0, 0, 0, 0.5]), 0, 'floored at 0');
  t.ok(scoreConfidence([0.1, 0.8, 0.1]) > scoreConfidence([0.3, 0.4, 0.3]));
});

const billing: NoulSpec = { kind: 'noul', name: 'n', instructions: 'Is this about billing?', yes: 'it is billing', no: null };

t.test('noul: yes/no order follows the ordering, answers follow the order', async (t) => {
  const first = render(noul, billing, [0, 1], ctx);
  t.equal(first.text, 'Question: Is this about billing?\nYes means: it is billing\nReply with only Yes or No.');
  t.same(first.answers, [
    [7, 17],
    [8, 18],
  ]);
  const swapped = render(noul, billing, [1, 0], ctx);
  t.match(swapped.text, 'Reply with only No or Yes.');
  t.same(swapped.answers, [
    [8, 18],
    [7, 17],
  ]);
  t.equal(noul.options(billing), 2);
});

t.test('noul answer: P(yes) is option 0', async (t) => {
  const a = noul.answer(billing, reading([0.8, 0.2], { raw: [0.6, 0.4], band: 'high' }));
  t.equal(a.noul, 0.8);
  t.equal(a.raw_noul, 0.6);
  t.equal(a.confidence_band, 'high');
});

t.test('normalise: criteria forms reduce to option lists; counting rules hold', async (t) => {
  t.same(
    choice.normalise('q', { type: 'choice', criteria: 'a, b ,c' }).spec?.options.map((o) => o.label),
    ['a', 'b', 'c'],
  );
  t.same(choice.normalise('q', { type: 'choice', criteria: { x: 'ex', y: null } }).spec?.options, [
    { label: 'x', description: 'ex' },
    { label: 'y', description: null },
  ]);
  t.match(choice.normalise('q', { type: 'choice', criteria: ['a'] }).errors[0], { type: 'too_short', loc: ['body', 'questions', 'q', 'criteria'] });
  t.match(choice.normalise('q', { type: 'choice', criteria: ['a', 'a'] }).errors[0]?.msg, /distinct/);
  t.same(score.normalise('s', { type: 'score', criteria: { '0': 'low', high: 'very', mid: null } }).spec?.levels, ['low', 'high: very', 'mid']);
  t.match(score.normalise('s', { type: 'score', criteria: Array.from({ length: 11 }, (_, i) => String(i)) }).errors[0], { type: 'too_long' });
  t.same(noul.normalise('n', { criteria: { true: 'paid', false: { why: 'free' } } }).spec, {
    kind: 'noul',
    name: 'n',
    instructions: null,
    yes: 'paid',
    no: '{"why":"free"}',
  });
});

t.test('score legend: each level as the client sent it; only the prompt renders it as text', async (t) => {
  const criteria = [{ level: 'low', hint: 'x' }, ['mid', 1], 'high', null];
  const spec = score.normalise('s', { type: 'score', criteria }).spec!;
  t.same(spec.levels, ['{"level":"low","hint":"x"}', '["mid",1]', 'high', ''], 'the model sees compact JSON');
  const a = score.answer(spec, reading([0.1, 0.2, 0.3, 0.4]));
  t.same(a.legend, { '0': { level: 'low', hint: 'x' }, '1': ['mid', 1], '2': 'high', '3': '' }, 'objects and arrays come back as sent');
  const keyed = score.normalise('s', { type: 'score', criteria: { '0': { a: 1 }, high: 'very', mid: null } }).spec!;
  t.same(keyed.legend, [{ a: 1 }, 'high: very', 'mid'], 'a named level keeps its name where it was text');
  t.same(score.normalise('s', { type: 'score', criteria: 'low\nhigh' }).spec?.legend, ['low', 'high']);
});

t.test('box (preview): validated like any question, then refused by name as needing images', async (t) => {
  const { spec, errors } = box.normalise('dog', { type: 'box', instructions: { find: 'the dog' } });
  t.same(errors, []);
  t.same(spec, { kind: 'box', name: 'dog', instructions: '{"find":"the dog"}' });
  t.ok(isPreview(spec!), 'a preview kind: no engine here answers it');
  t.notOk(isPreview(stars), 'score is answered');
  t.match(box.refusal(spec!), /text-only/);
});

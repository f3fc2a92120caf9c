// decide() on the real default model through the real engine: one request of each question type
// and the yes_no alias, with permute and raw options.
import t from 'tap';
import { validateSystemOneRequest } from '../../src/api/schemas/systemone-validate.js';
import { decide } from '../../src/decision/decide.js';
import { calibrationFrom } from '../../src/decision/calibration.js';
import { createLocalEngine } from '../../src/engine/local.js';
import { ValidationFailure } from '../../src/api/errors.js';
import type { ChoiceAnswer, NoulAnswer, ScoreAnswer } from '../../src/api/schemas/systemone.js';
import { TEST_MODEL } from '../helpers/models.js';

const engine = await createLocalEngine(TEST_MODEL, { threads: 2 });
t.teardown(() => engine.close());
const info = await engine.info();
let calls = 0;
const counting = { info: () => engine.info(), scoreText: (r: Parameters<typeof engine.scoreText>[0]) => (calls++, engine.scoreText(r)) };
const run = (body: unknown, maxPromptTokens = 4096) => decide(validateSystemOneRequest(body), counting, info, { maxPromptTokens });
const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
const near = (a: number, b: number, eps = 1e-9) => Math.abs(a - b) < eps;

const state = 'Ticket #4411: I was charged twice for my subscription this month. Please refund the second payment.';
const questions = {
  billing: { instructions: 'Is this ticket about billing?' },
  billing_alias: { type: 'yes_no', instructions: 'Is this ticket about billing?' },
  topic: {
    type: 'choice',
    instructions: 'What is this ticket about?',
    criteria: { billing: 'payments, charges, refunds', technical: 'bugs and errors', other: null },
  },
  urgency: { type: 'score', instructions: 'How urgent is this ticket?', criteria: ['not urgent', 'somewhat urgent', 'very urgent'] },
};

t.test('every type with permute and raw probabilities, in one engine call', async (t) => {
  const before = calls;
  const d = await run({ state, questions, options: { debias: 'permute', debias_passes: 4, return_raw_probabilities: true } });
  t.equal(calls - before, 1, 'every pass of every question in one engine call');
  const noul = d.answers.billing as NoulAnswer;
  const alias = d.answers.billing_alias as NoulAnswer;
  const topic = d.answers.topic as ChoiceAnswer;
  const urgency = d.answers.urgency as ScoreAnswer;
  t.equal(noul.type, 'noul');
  t.equal(alias.type, 'noul', 'yes_no is answered as noul');
  // Identical branches in one batch differ slightly on the CPU backend (batch-dependent rounding).
  t.ok(near(alias.noul, noul.noul, 0.05), `the alias asks the same question: ${alias.noul} vs ${noul.noul}`);
  t.ok(noul.noul > 0 && noul.noul < 1);
  t.ok(noul.raw_noul !== null && noul.raw_noul !== noul.noul, 'permute moves the noul away from the raw pass');
  t.equal(noul.debias_passes, 4);

  t.ok(near(sum(topic.probabilities), 1), 'choice probabilities sum to 1');
  t.ok(near(sum(topic.raw_probabilities!), 1), 'raw choice probabilities sum to 1');
  t.same(Object.keys(topic.probabilities), ['billing', 'technical', 'other']);
  t.not(topic.probabilities.billing, topic.raw_probabilities!.billing, 'permute changes raw vs debiased');
  const best = Object.entries(topic.probabilities).sort((a, b) => b[1] - a[1])[0]![0];
  t.equal(topic.choice, best);
  t.ok(topic.confidence >= 0 && topic.confidence <= 1);
  const top = Math.max(...Object.values(topic.probabilities));
  t.ok(near(topic.confidence, (top - 1 / 3) / (1 - 1 / 3)), 'choice confidence is the reference formula');
  for (const a of [noul, topic, urgency]) t.ok(a.label_mass! > 0 && a.label_mass! <= 1, `label mass ${a.label_mass} in (0, 1]`);
  t.equal(d.calibration, null, 'no calibration asked for');
  t.equal(Object.keys(d.uncalibrated).length, 4, 'every question keeps its uncalibrated distribution');
  t.same(d.uncalibrated.topic!.p, Object.values(topic.probabilities), 'uncalibrated equals the answer when no calibration applies');

  t.ok(near(sum(urgency.probabilities), 1), 'score probabilities sum to 1');
  t.same(urgency.legend, { '0': 'not urgent', '1': 'somewhat urgent', '2': 'very urgent' });
  const levels = Object.values(urgency.probabilities);
  t.ok(Math.abs(urgency.score - levels.reduce((acc, p, i) => acc + i * p, 0)) < 1e-12, 'the score is Σ i·pᵢ');

  // distinct orderings: each noul 2 (yes first, no first); the choice 3 (shifts 0,0,1,2 over 3
  // options); the score 2 (its scale ascending and descending)
  t.equal(d.usage.output_tokens, 2 + 2 + 3 + 2, 'one output token per distinct branch read');
  t.ok(d.usage.input_tokens > 0 && d.evaluatedTokens > 0);
});

t.test('the raw pass of a permuted request is the unpermuted request', async (t) => {
  const permuted = await run({ state, questions: { topic: questions.topic }, options: { debias: 'permute', return_raw_probabilities: true } });
  const plain = await run({ state, questions: { topic: questions.topic }, options: { return_raw_probabilities: true } });
  const raw = (permuted.answers.topic as ChoiceAnswer).raw_probabilities!;
  const off = plain.answers.topic as ChoiceAnswer;
  for (const label of Object.keys(raw)) t.ok(near(raw[label]!, off.probabilities[label]!, 0.05), `${label}: ${raw[label]} vs ${off.probabilities[label]}`);
  t.same(off.raw_probabilities, off.probabilities, 'without permute raw equals the answer');
  t.equal(off.debias_passes, null);
  t.equal((permuted.answers.topic as ChoiceAnswer).debias_passes, 4, 'the default pass count is echoed');
});

t.test('a calibration is applied per kind, keeps raw probabilities raw, and sets the band', async (t) => {
  const calibration = calibrationFrom({
    version: 'L2.test.1',
    model_sha256: info.sha256,
    layout: 'L2',
    created_at: '',
    source: 'test',
    reports: [],
    fits: { choice: { method: 'temperature', temperature: 4 } },
  });
  const body = { state, questions: { topic: questions.topic, billing: questions.billing }, options: { return_raw_probabilities: true } };
  const plain = await run(body);
  const calibrated = await decide(validateSystemOneRequest(body), counting, info, { maxPromptTokens: 4096, calibration });
  const before = plain.answers.topic as ChoiceAnswer;
  const after = calibrated.answers.topic as ChoiceAnswer;
  t.equal(after.choice, before.choice, 'temperature scaling never changes the choice');
  t.ok(Math.max(...Object.values(after.probabilities)) < Math.max(...Object.values(before.probabilities)), 'T = 4 softens the distribution');
  t.same(after.raw_probabilities, before.raw_probabilities, 'raw probabilities stay uncalibrated');
  t.ok(['high', 'leaning', 'low'].includes(after.confidence_band!), `band ${after.confidence_band}`);
  t.equal((calibrated.answers.billing as NoulAnswer).confidence_band, null, 'a kind without a fit stays uncalibrated');
  t.same(calibrated.calibration, { version: 'L2.test.1', method: 'temperature' });
  const unfitted = await decide(validateSystemOneRequest(body), counting, info, { maxPromptTokens: 4096, calibration: null });
  t.same(unfitted.calibration, { version: null, method: 'none' }, 'on but unfitted says so');
});

t.test('a state beyond the limit is a 422 naming the limit and the header', async (t) => {
  const err = await run({ state: 'word '.repeat(400), questions: { q: {} } }, 64).catch((e: unknown) => e);
  t.ok(err instanceof ValidationFailure);
  const item = (err as ValidationFailure).detail[0]!;
  t.same(item.loc, ['body', 'state']);
  t.match(item.msg, /64 prompt tokens/);
  t.match(item.msg, /Arbitra-Danger-Zone-Long-Context/);
});

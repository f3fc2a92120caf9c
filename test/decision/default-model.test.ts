// The default model gets obvious decisions right, through the whole decision layer. Answer
// quality is measured in bench:quality; these are the floor a user meets on day one: each answer on
// the right side with a clear lean, not a calibrated certainty (the 1.5B model's yes/no readings are
// moderate: a rave review is a complaint with P ≈ 0.3).
import t from 'tap';
import { validateSystemOneRequest } from '../../src/api/schemas/systemone-validate.js';
import type { ChoiceAnswer, NoulAnswer, ScoreAnswer } from '../../src/api/schemas/systemone.js';
import { calibrationFrom } from '../../src/decision/calibration.js';
import { presetCalibration } from '../../src/decision/calibration-presets.js';
import { decide } from '../../src/decision/decide.js';
import { LAYOUT_VERSION } from '../../src/decision/prompt.js';
import { selfTest } from '../../src/decision/self-test.js';
import { createLocalEngine } from '../../src/engine/local.js';
import { DEFAULT_MODEL_FILE } from '../helpers/models.js';

const engine = await createLocalEngine(DEFAULT_MODEL_FILE, { threads: 2, contextSize: 1024, maxSequences: 16 });
t.teardown(() => engine.close());
const info = await engine.info();
const ask = async (state: string, questions: Record<string, unknown>) =>
  (await decide(validateSystemOneRequest({ state, questions }), engine, info, { maxPromptTokens: 1024 })).answers;

t.test('the default model is framed by its chat template', async (t) => {
  t.equal(info.promptFrame, 'chat');
  t.equal(info.digitLabels.length, 10, 'score levels can be rated with digits');
});

t.test('a rave review: not a complaint, positive, rated at the top', async (t) => {
  const a = await ask(
    'Review: "Absolutely love this blender. It crushes ice in seconds, it is quiet, and it looks great on the counter. Best purchase this year!"',
    {
      complaint: { type: 'noul', instructions: 'Is this a complaint?' },
      sentiment: { type: 'choice', instructions: 'What is the sentiment of the review?', criteria: ['negative', 'neutral', 'positive'] },
      stars: { type: 'score', instructions: 'How many stars would the reviewer give?', criteria: ['1 star', '2 stars', '3 stars', '4 stars', '5 stars'] },
    },
  );
  t.ok((a.complaint as NoulAnswer).noul < 0.4, `P(complaint) ${(a.complaint as NoulAnswer).noul}`);
  t.equal((a.sentiment as ChoiceAnswer).choice, 'positive');
  t.ok((a.stars as ScoreAnswer).score > 3.5, `score ${(a.stars as ScoreAnswer).score} of 0..4`);
  t.ok((a.sentiment as ChoiceAnswer).label_mass! > 0.9, 'the model answers with a label');
});

t.test('a furious ticket: a complaint, routed to billing, rated urgent', async (t) => {
  const a = await ask(
    'Ticket: "You charged my card three times for one order. This is the second time this month. Fix it today or I am disputing all of it with my bank."',
    {
      complaint: { type: 'noul', instructions: 'Is this a complaint?' },
      team: {
        type: 'choice',
        instructions: 'Which team should handle this ticket?',
        criteria: {
          shipping: 'deliveries and parcels',
          billing: 'charges, invoices and refunds',
          technical: 'bugs and login problems',
          sales: 'new orders and quotes',
        },
      },
      urgency: { type: 'score', instructions: 'How urgent is this ticket?', criteria: ['not urgent', 'somewhat urgent', 'urgent', 'very urgent'] },
    },
  );
  t.ok((a.complaint as NoulAnswer).noul > 0.6, `P(complaint) ${(a.complaint as NoulAnswer).noul}`);
  t.equal((a.team as ChoiceAnswer).choice, 'billing');
  // The levels as the model reads them (layout L4): its lean is towards "urgent" (2) and above,
  // while the expectation Σ i·pᵢ of a spread distribution stays nearer the middle of the scale.
  const urgency = Object.values((a.urgency as ScoreAnswer).probabilities);
  t.ok(urgency.indexOf(Math.max(...urgency)) >= 2, `the most probable level is urgent or above: ${urgency.map((p) => p.toFixed(2)).join(' / ')}`);
  t.ok(urgency[2]! + urgency[3]! > 0.5, `P(urgent or above) ${urgency[2]! + urgency[3]!}`);
});

t.test("the shipped preset is this model file's, and calibrates its yes/no and choice answers", async (t) => {
  const preset = presetCalibration(info.sha256, LAYOUT_VERSION);
  t.ok(preset, `a preset for ${info.sha256.slice(0, 8)} under ${LAYOUT_VERSION}`);
  const req = validateSystemOneRequest({
    state: 'Ticket: "The app logs me out every time I open the settings page."',
    questions: {
      bug: { type: 'noul', instructions: 'Is this a bug report?' },
      team: { type: 'choice', instructions: 'Which team should handle this ticket?', criteria: ['billing', 'technical', 'shipping'] },
    },
    options: { return_raw_probabilities: true },
  });
  const d = await decide(req, engine, info, { maxPromptTokens: 1024, calibration: calibrationFrom(preset!) });
  t.same(d.calibration, { version: preset!.version, method: 'platt+temperature' });
  const team = d.answers.team as ChoiceAnswer;
  t.ok(team.confidence_band !== null && (d.answers.bug as NoulAnswer).confidence_band !== null, 'both types carry a band');
  // The choice map is a temperature below 1: the model's underconfident choices are sharpened, the choice kept.
  t.ok(
    team.probabilities[team.choice]! > team.raw_probabilities![team.choice]!,
    `${team.raw_probabilities![team.choice]} → ${team.probabilities[team.choice]}`,
  );
});

t.test('the load-time self-test passes on the default model', async (t) => {
  const result = await selfTest(engine, info);
  t.same(result.failures, []);
  t.equal(result.passed, result.total);
});

// A model's first decisions: a few questions any capable model answers right, asked once after it
// loads. A model that gets them wrong (a base model, a broken quantisation, a template llama.cpp
// renders badly) is still served, but the operator is told which ones it missed.
import type { EngineInfo, EngineService } from '../engine/types.js';
import { decide } from './decide.js';
import { normaliseQuestion, normaliseRequest, type NormalisedRequest } from './normalise.js';
import { ValidationFailure } from './schema/problems.js';

const STATE =
  'Review of the ToastMaster 3000, one star: "Terrible. It burnt every slice on the lowest setting, stopped working after two days, ' +
  'and customer service never answered my three emails. I want my money back."';

/** Each question with the check its answer must pass. */
const CHECKS: { name: string; question: Record<string, unknown>; passes: (answer: Record<string, unknown>) => boolean; expect: string }[] = [
  { name: 'happy', question: { type: 'noul', instructions: 'Is the reviewer happy with the product?' }, passes: (a) => (a.noul as number) < 0.5, expect: 'no' },
  { name: 'refund', question: { type: 'noul', instructions: 'Does the reviewer ask for a refund?' }, passes: (a) => (a.noul as number) > 0.5, expect: 'yes' },
  {
    name: 'sentiment',
    question: { type: 'choice', instructions: 'What is the sentiment of the review?', criteria: ['positive', 'neutral', 'negative'] },
    passes: (a) => a.choice === 'negative',
    expect: 'negative',
  },
  {
    name: 'product',
    question: { type: 'choice', instructions: 'Which kind of product is reviewed?', criteria: ['kitchen appliance', 'garden tool', 'book', 'car'] },
    passes: (a) => a.choice === 'kitchen appliance',
    expect: 'kitchen appliance',
  },
  {
    name: 'satisfaction',
    question: {
      type: 'score',
      instructions: 'How satisfied is the reviewer?',
      criteria: ['very dissatisfied', 'dissatisfied', 'neutral', 'satisfied', 'very satisfied'],
    },
    passes: (a) => (a.score as number) < 1.5,
    expect: 'a score below 1.5',
  },
];

export interface SelfTestResult {
  passed: number;
  total: number;
  /** One line per missed check: the question, what was expected, what came back. */
  failures: string[];
}

/** The checks as one request; they are written right, so a problem here is ours, not the model's. */
function checksRequest(): NormalisedRequest {
  const questions = CHECKS.map((c) => {
    const { spec, errors } = normaliseQuestion(c.name, c.question);
    if (!spec) throw new ValidationFailure(errors);
    return spec;
  });
  return normaliseRequest({ state: STATE, options: { debias: 'permute', debias_passes: 2 } }, questions);
}

export async function selfTest(engine: EngineService, info: EngineInfo): Promise<SelfTestResult> {
  const request = checksRequest();
  // In the background: a user's first request after start-up must not wait behind it.
  const { answers } = await decide(request, engine, info, { maxPromptTokens: 1 << 20, background: true });
  const failures = CHECKS.flatMap((c) => {
    const answer = answers[c.name] as unknown as Record<string, unknown>;
    if (c.passes(answer)) return [];
    const got =
      answer.type === 'noul'
        ? `P(yes) ${(answer.noul as number).toFixed(2)}`
        : answer.type === 'choice'
          ? String(answer.choice)
          : `score ${(answer.score as number).toFixed(2)}`;
    return [`"${c.question.instructions as string}" expected ${c.expect}, got ${got}`];
  });
  return { passed: CHECKS.length - failures.length, total: CHECKS.length, failures };
}

/** The log line(s) for a result, naming the model. */
export function selfTestReport(model: string, r: SelfTestResult): string[] {
  if (r.failures.length === 0) return [`self-test: ${model} answered ${r.passed}/${r.total} obvious decisions right`];
  return [
    `warning: ${model} failed ${r.failures.length} of ${r.total} obvious decisions in the self-test; its answers are not to be trusted:`,
    ...r.failures.map((f) => `  - ${f}`),
  ];
}

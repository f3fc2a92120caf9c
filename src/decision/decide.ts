// One decision request → one engine call: every pass of every question is a branch off the shared
// state prefix, so the state is evaluated once however many questions and passes there are.
import { ValidationFailure, type ValidationErrorItem } from '../api/errors.js';
import { valueError } from '../api/validation.js';
import type { Answer } from '../api/schemas/systemone.js';
import { EngineError, type EngineInfo, type EngineService, type TextBranch } from '../engine/types.js';
import type { NormalisedRequest, QuestionSpec } from './normalise.js';
import { balancedOrderings, distinctOrderings, type Ordering } from './permutations.js';
import { buildBranch, buildPrefix, optionCount } from './prompt.js';
import { readChoice, readNoul, readScore, type PassReading, type ReadoutOptions } from './readout.js';

export const LONG_CONTEXT_HEADER = 'Arbitra-Danger-Zone-Long-Context';

export interface DecideOptions {
  /** Most prompt tokens (prefix + longest suffix) this request may use. */
  maxPromptTokens: number;
  /** Whether the long-context header raised maxPromptTokens; shapes the error message. */
  longContext?: boolean;
}

export interface Decision {
  answers: Record<string, Answer>;
  usage: { input_tokens: number; output_tokens: number };
  evaluatedTokens: number;
}

interface Plan {
  question: QuestionSpec;
  passes: { ordering: Ordering; weight: number; branch: number }[];
}

function unservableOptions(req: NormalisedRequest, info: EngineInfo): ValidationErrorItem[] {
  const max = info.optionLabels.length;
  return req.questions
    .filter((q) => q.kind !== 'noul' && optionCount(q) > max)
    .map((q) => ({
      type: 'too_long',
      loc: ['body', 'questions', q.name, 'criteria'],
      msg: `This model offers ${max} single-token option labels; the question has ${optionCount(q)} options`,
      ctx: { field_type: 'List', max_length: max, actual_length: optionCount(q) },
    }));
}

function contextFailure(err: EngineError, opts: DecideOptions, info: EngineInfo): ValidationFailure {
  const needed = typeof err.details.tokens === 'number' ? ` needs ${err.details.tokens} tokens and` : '';
  const msg = opts.longContext
    ? `The state with its questions${needed} exceeds the limit of ${opts.maxPromptTokens} prompt tokens (the model's training context or the engine's --ctx-size, whichever is smaller); shorten the state`
    : `The state with its questions${needed} exceeds the default limit of ${opts.maxPromptTokens} prompt tokens; shorten the state, or send the header ${LONG_CONTEXT_HEADER}: true to allow up to ${Math.min(info.trainingContext, info.contextSize)} tokens`;
  return new ValidationFailure([{ ...valueError(['body', 'state'], msg, undefined), ctx: { error: msg, max_prompt_tokens: opts.maxPromptTokens } }]);
}

export async function decide(req: NormalisedRequest, engine: EngineService, info: EngineInfo, opts: DecideOptions): Promise<Decision> {
  const tooMany = unservableOptions(req, info);
  if (tooMany.length > 0) throw new ValidationFailure(tooMany);

  const permute = req.options.debias === 'permute';
  const passCount = permute ? req.options.debias_passes : 1;
  const branches: TextBranch[] = [];
  const plans: Plan[] = req.questions.map((question) => ({
    question,
    passes: distinctOrderings(balancedOrderings(optionCount(question), passCount)).map(({ ordering, weight }) => {
      branches.push(buildBranch(question, ordering, info));
      return { ordering, weight, branch: branches.length - 1 };
    }),
  }));

  let result;
  try {
    result = await engine.scoreText({ prefix: buildPrefix(info.frame, req.state), branches, maxPromptTokens: opts.maxPromptTokens });
  } catch (err) {
    if (err instanceof EngineError && err.code === 'context_exceeded') throw contextFailure(err, opts, info);
    throw err;
  }

  const readout: ReadoutOptions = { debiasPasses: permute ? passCount : null, returnRaw: req.options.return_raw_probabilities };
  // fromEntries defines own properties, so a question named "__proto__" is answered like any other.
  const answers: Record<string, Answer> = Object.fromEntries(
    plans.map(({ question, passes }) => {
      const readings: PassReading[] = passes.map((p) => ({ ordering: p.ordering, weight: p.weight, logprobs: result.branches[p.branch]! }));
      const answer =
        question.kind === 'noul'
          ? readNoul(readings, readout)
          : question.kind === 'choice'
            ? readChoice(question.options.map((o) => o.label), readings, readout)
            : readScore(question.levels, readings, readout);
      return [question.name, answer];
    }),
  );
  return {
    answers,
    usage: { input_tokens: result.promptTokens, output_tokens: branches.length },
    evaluatedTokens: result.evaluatedTokens,
  };
}

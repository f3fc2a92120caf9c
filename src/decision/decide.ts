// One decision request → one engine call: every pass of every question is a branch off the shared
// state prefix, so the state is evaluated once however many questions and passes there are.
import { EngineError, promptCapacity, type EngineInfo, type EngineService, type TextBranch } from '../engine/types.js';
import { confidenceBand, type Calibration } from './calibration.js';
import { isPreview, kindOf, previewKindOf, type AnsweredSpec, type RenderContext } from './kinds/index.js';
import type { NormalisedRequest } from './normalise.js';
import { ROTATED, type Permutation } from './debias.js';
import { distinctOrderings, type Ordering } from './permutations.js';
import { contextBlock, LAYOUT, type PromptLayout } from './prompt.js';
import { identityPass, labelMass, optionDistribution, type PassReading } from './readout.js';
import type { Answer } from './schema/answers.js';
import { ValidationFailure, valueError, type ValidationErrorItem } from './schema/problems.js';

export const LONG_CONTEXT_HEADER = 'Arbitra-Danger-Zone-Long-Context';

export interface DecideOptions {
  /** Most prompt tokens (prefix + longest suffix) this request may use. */
  maxPromptTokens: number;
  /** Whether the long-context header raised maxPromptTokens; shapes the error message. */
  longContext?: boolean;
  /** The served layout unless a benchmark measures another. */
  layout?: PromptLayout;
  /** Applied when given: fitted to this model and layout, or null when none is fitted. */
  calibration?: Calibration | null;
  /** Whose request it is: the engine shares its batches fairly between tenants. */
  tenant?: string;
  /** Whose prefix cache the state is looked up in and left in (an account); absent: the global cache. */
  cacheScope?: string;
  /** Aborts the engine work: the client left or the deadline passed. */
  signal?: AbortSignal;
  /** Milliseconds left before the request's deadline: the engine drops the work when they run out. */
  deadlineMs?: number;
  /** The engine refuses, before doing any of it, work it reckons it cannot finish in deadlineMs. */
  admitByCost?: boolean;
  /** The most prompt tokens (state once plus every branch) the request may use; absent: no cap. */
  maxRequestTokens?: number;
  /** Nobody waits for the answer (the self-test): the engine runs it only while it has nothing else. */
  background?: boolean;
}

export interface Decision {
  answers: Record<string, Answer>;
  usage: { input_tokens: number; output_tokens: number };
  evaluatedTokens: number;
  /** Per question, the debiased distribution before any calibration: what a later calibration is fitted on. */
  uncalibrated: Record<string, { kind: AnsweredSpec['kind']; p: number[] }>;
  /** What meta reports: the applied calibration, "none" when on but unfitted; null when off. */
  calibration: { version: string | null; method: string } | null;
}

interface Plan {
  question: AnsweredSpec;
  /** Per probe of the question, how its passes pool, and its passes: one branch per distinct ordering of its answers. */
  probes: { permutation: Permutation; passes: { ordering: Ordering; weight: number; branch: number }[] }[];
}

/** Questions of a kind no engine here answers, each refused by name with the reason. */
export function refusedPreviews(req: NormalisedRequest): ValidationErrorItem[] {
  return req.questions.filter(isPreview).map((q) => valueError(['body', 'questions', q.name], previewKindOf(q).refusal(q), undefined));
}

function unservableOptions(questions: AnsweredSpec[], ctx: RenderContext): ValidationErrorItem[] {
  return questions.flatMap((q) => {
    const kind = kindOf(q);
    const max = kind.capacity(ctx);
    const count = kind.options(q);
    if (count <= max) return [];
    return [
      {
        type: 'too_long',
        loc: ['body', 'questions', q.name, 'criteria'],
        msg: `This model offers ${max} single-token labels for a ${q.kind} question; the question has ${count} options`,
        ctx: { field_type: 'List', max_length: max, actual_length: count },
      },
    ];
  });
}

/** Work past a per-request cap (0 = none), as the 422 item naming the cap and its variable; null within it. */
function overCap(cap: number, actual: number, what: string, variable: string): ValidationErrorItem | null {
  if (cap <= 0 || actual <= cap) return null;
  return {
    type: 'too_long',
    loc: ['body', 'questions'],
    msg: `This request needs ${actual} ${what}; this server allows at most ${cap} per request (${variable}); split it into several requests`,
    ctx: { field_type: 'Dictionary', max_length: cap, actual_length: actual },
  };
}

/** More questions than the cap (0 = none): a count, checked before any question is. */
export function tooManyQuestions(questions: number, cap: number): ValidationErrorItem | null {
  return overCap(cap, questions, 'questions', 'ARBITRA_MAX_QUESTIONS');
}

/** The request's work against the per-request caps (0 = none), as 422 items naming the cap passed. */
export function overCaps(req: NormalisedRequest, caps: { questions: number; branches: number }): ValidationErrorItem[] {
  const questions = req.questions.length;
  const passes = req.options.debias === 'permute' ? req.options.debias_passes : 1;
  return [
    tooManyQuestions(questions, caps.questions),
    overCap(caps.branches, questions * passes, `scored branches (${questions} questions × ${passes} passes)`, 'ARBITRA_MAX_BRANCHES'),
  ].filter((item) => item !== null);
}

function contextFailure(err: EngineError, opts: DecideOptions, info: EngineInfo): ValidationFailure {
  const needed = typeof err.details.tokens === 'number' ? ` needs ${err.details.tokens} tokens and` : '';
  const capacity = promptCapacity(info);
  // The header only helps where the operator set the default limit below what the engine holds.
  const msg =
    opts.longContext || opts.maxPromptTokens >= capacity
      ? `The state with its questions${needed} exceeds the limit of ${opts.maxPromptTokens} prompt tokens (the model's training context or the engine's --long-ctx-size, whichever is smaller); shorten the state`
      : `The state with its questions${needed} exceeds the default limit of ${opts.maxPromptTokens} prompt tokens; shorten the state, or send the header ${LONG_CONTEXT_HEADER}: true to allow up to ${capacity} tokens`;
  return new ValidationFailure([{ ...valueError(['body', 'state'], msg, undefined), ctx: { error: msg, max_prompt_tokens: opts.maxPromptTokens } }]);
}

/** Work the engine cannot finish before the deadline, told in the request's terms: what fits. */
function costFailure(err: EngineError): ValidationFailure {
  const msg = `The questions are more work than this server takes in one request: ${err.message}. Ask fewer questions or fewer debias passes in one request, or shorten the state`;
  const d = err.details;
  const ctx =
    typeof d.maxRequestTokens === 'number'
      ? { error: msg, tokens: d.tokens, max_request_tokens: d.maxRequestTokens, branches: d.branches }
      : {
          error: msg,
          estimated_seconds: Number(d.estimatedMs) / 1000,
          admitted_seconds: Number(d.budgetMs) / 1000,
          branches: d.branches,
          branches_that_fit: d.branchesThatFit,
        };
  return new ValidationFailure([{ ...valueError(['body', 'questions'], msg, undefined), ctx }]);
}

export async function decide(req: NormalisedRequest, engine: EngineService, info: EngineInfo, opts: DecideOptions): Promise<Decision> {
  const layout = opts.layout ?? LAYOUT;
  const ctx: RenderContext = { labels: info, layout };
  const questions = req.questions.filter((q): q is AnsweredSpec => !isPreview(q));
  const refused = [...refusedPreviews(req), ...unservableOptions(questions, ctx)];
  if (refused.length > 0) throw new ValidationFailure(refused);

  const permute = req.options.debias === 'permute';
  const passCount = permute ? req.options.debias_passes : 1;
  const branches: TextBranch[] = [];
  const plans: Plan[] = questions.map((question) => ({
    question,
    probes: kindOf(question)
      .probes(question, ctx)
      .map((probe) => {
        const permutation = probe.permutation ?? ROTATED;
        const passes = distinctOrderings(permutation.orderings(probe.answers, passCount)).map(({ ordering, weight }) => {
          const { text, answers } = probe.render(ordering);
          branches.push({ suffix: text, answers });
          return { ordering, weight, branch: branches.length - 1 };
        });
        return { permutation, passes };
      }),
  }));

  let result;
  try {
    result = await engine.scoreText(
      {
        system: layout.system,
        prefix: contextBlock(req.state),
        branches,
        maxPromptTokens: opts.maxPromptTokens,
        tenant: opts.tenant,
        cacheScope: opts.cacheScope,
        deadlineMs: opts.deadlineMs,
        admitByCost: opts.admitByCost,
        maxRequestTokens: opts.maxRequestTokens,
        background: opts.background,
      },
      opts.signal,
    );
  } catch (err) {
    if (err instanceof EngineError && err.code === 'context_exceeded') throw contextFailure(err, opts, info);
    if (err instanceof EngineError && err.code === 'too_costly') throw costFailure(err);
    throw err;
  }

  const calibration = opts.calibration;
  // Raw probabilities are the model's own: the unpermuted pass, before the layout sharpens a score.
  const asRead: RenderContext = { ...ctx, layout: { ...layout, scoreTemperature: 1 } };
  const uncalibrated = Object.create(null) as Decision['uncalibrated'];
  // fromEntries defines own properties, so a question named "__proto__" is answered like any other.
  const answers: Record<string, Answer> = Object.fromEntries(
    plans.map(({ question, probes }) => {
      const kind = kindOf(question);
      const readings: PassReading[][] = probes.map(({ passes }) =>
        passes.map((p) => ({ ordering: p.ordering, weight: p.weight, logprobs: result.branches[p.branch]! })),
      );
      const debiased = kind.combine(
        question,
        readings.map((r, i) => probes[i]!.permutation.pool(r)),
        ctx,
      );
      uncalibrated[question.name] = { kind: question.kind, p: debiased };
      const calibrated = calibration?.apply(question.kind, debiased) ?? null;
      const answer = kind.answer(question, {
        p: calibrated ?? debiased,
        raw: req.options.return_raw_probabilities
          ? kind.combine(
              question,
              readings.map((r) => optionDistribution(identityPass(r))),
              asRead,
            )
          : null,
        debiasPasses: permute ? passCount : null,
        band: calibrated ? confidenceBand(calibrated) : null,
        labelMass: readings.reduce((acc, r) => acc + labelMass(r), 0) / readings.length,
      });
      return [question.name, answer];
    }),
  );
  return {
    answers,
    usage: { input_tokens: result.promptTokens, output_tokens: branches.length },
    evaluatedTokens: result.evaluatedTokens,
    uncalibrated,
    calibration:
      calibration === undefined
        ? null
        : calibration === null
          ? { version: null, method: 'none' }
          : { version: calibration.version, method: calibration.method },
  };
}

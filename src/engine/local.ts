// The engine service in the process that owns the model: body text in, answer log-probs out. The
// engine owns the framing: it wraps the caller's body text in the model's chat template (or the
// plain layout) and tokenises the frame's pieces once per system text.
import { getMaxListeners, setMaxListeners } from 'node:events';
import { checkDeterminism, stockMismatch } from './determinism-check.js';
import { servedPath } from './exact-path.js';
import { branchesThatFit, DEADLINE_SHARE, isMeasured, WorkLedger, workMs, type DecodeCost, type DecodePlan, type WorkShape } from './admission.js';
import { groupBranchHeads, type BranchGroup } from './branch-heads.js';
import { promptFrame, type PromptFrame } from './frame.js';
import { findDigitLabels, findOptionLabels, findYesNo } from './labels.js';
import { DEFAULT_ENGINE_OPTIONS, LlamaEngine, type ScoreOutcome } from './llama-engine.js';
import { livenessBoundMs } from './liveness.js';
import {
  EngineError,
  type EngineInfo,
  type EngineStats,
  type EngineOptions,
  type EngineService,
  type TextScoreRequest,
  type TextScoreResult,
} from './types.js';
import { warmUp } from './warm-up.js';

/** A frame and its fixed pieces tokenised with control tokens parsed. */
interface FrameTokens {
  frame: PromptFrame;
  /** BOS and head: what every prefix starts with. */
  head: Int32Array;
  tail: Int32Array;
}

/** A request as the model reads it. */
export interface FramedPrompt<T> {
  prefix: T;
  suffixes: T[];
}

// System texts come from the decision layer's prompt layouts, a handful at most; the bound only
// keeps a misbehaving caller from growing the map.
const MAX_FRAMES = 16;

function concat(parts: Int32Array[]): Int32Array {
  const out = new Int32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** log Σ exp(x) over the spellings of one answer. */
function logSumExp(values: number[]): number {
  const max = Math.max(...values);
  if (!Number.isFinite(max)) return max;
  return max + Math.log(values.reduce((acc, v) => acc + Math.exp(v - max), 0));
}

const seconds = (ms: number): string => (ms >= 10_000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`);

export class LocalEngine implements EngineService {
  private readonly frames = new Map<string | null, FrameTokens>();
  /** The work in hand, in estimated engine milliseconds, worn down by the time the engine spends. */
  private readonly ledger: WorkLedger;
  /** Requests admission refused, by reason. */
  private readonly refusals = { tooCostly: 0, busy: 0 };

  private constructor(
    readonly engine: LlamaEngine,
    private readonly engineInfo: EngineInfo,
    /** The liveness floor (EngineOptions.livenessSeconds). */
    private readonly livenessFloorMs: number,
  ) {
    this.ledger = new WorkLedger(() => {
      const s = engine.stats();
      return (s.decodeSeconds + s.readoutSeconds) * 1000;
    });
  }

  static async create(modelPath: string, options: Partial<EngineOptions> = {}): Promise<LocalEngine> {
    let engine = await LlamaEngine.load(modelPath, options);
    await warmUp(engine);
    const check = options.checkDeterminism ?? DEFAULT_ENGINE_OPTIONS.checkDeterminism;
    let determinism = check ? await checkDeterminism(engine, options.faultKernelsNats) : null;
    const mismatch = determinism && stockMismatch(determinism);
    if (mismatch) {
      // Serve what computes the model, and say why: the engine is loaded again on the stock kernels.
      await engine.close();
      engine = await LlamaEngine.load(modelPath, { ...options, kernels: 'fast' });
      await warmUp(engine);
      determinism = { ...(await checkDeterminism(engine)), fallback: mismatch };
    }
    // Counted from here: the load's warm-up decodes are not the requests' a liveness test stalls.
    if (options.faultStallAfterDecodes) engine.faultStall(options.faultStallAfterDecodes);
    const tokenize = (text: string) => engine.tokenize(text, { addSpecial: false, parseSpecial: false });
    const info: EngineInfo = {
      ...engine.facts,
      promptFrame: promptFrame((m) => engine.applyChatTemplate(m), null).plain ? 'plain' : 'chat',
      optionLabels: findOptionLabels(tokenize),
      digitLabels: findDigitLabels(tokenize),
      ...findYesNo(tokenize),
      determinism,
      kernelPath: servedPath(engine.facts),
    };
    return new LocalEngine(engine, info, (options.livenessSeconds ?? DEFAULT_ENGINE_OPTIONS.livenessSeconds) * 1000);
  }

  async info(): Promise<EngineInfo> {
    return this.engineInfo;
  }

  /** The frame's pieces for this system text, tokenised once. */
  private frameTokens(system: string | null): FrameTokens {
    let tokens = this.frames.get(system);
    if (tokens) return tokens;
    const frame = promptFrame((m) => this.engine.applyChatTemplate(m), system);
    const bos = this.engine.tokenize('', { addSpecial: true });
    const head = this.engine.tokenize(frame.head, { parseSpecial: true });
    // Some templates spell out the BOS token themselves; adding another would double it.
    const bosInHead = bos.length > 0 && head[0] === bos[0];
    tokens = { frame, head: bosInHead ? head : concat([bos, head]), tail: this.engine.tokenize(frame.tail, { parseSpecial: true }) };
    if (this.frames.size >= MAX_FRAMES) this.frames.delete(this.frames.keys().next().value!);
    this.frames.set(system, tokens);
    return tokens;
  }

  /**
   * Only the frame may produce control tokens: a caller's state or question that spells out
   * e.g. "<|im_start|>" stays plain text instead of opening a turn.
   */
  private body(text: string): Int32Array {
    return this.engine.tokenize(text, { parseSpecial: false });
  }

  /** The text of a request with its frame, as the model reads it (baselines, debugging). */
  framedText(request: Pick<TextScoreRequest, 'system' | 'prefix' | 'branches'>): FramedPrompt<string> {
    const { frame } = this.frameTokens(request.system);
    return { prefix: frame.head + request.prefix, suffixes: request.branches.map((b) => b.suffix + frame.tail) };
  }

  /** The tokens of a request with its frame, BOS included. */
  tokenizeRequest(request: Pick<TextScoreRequest, 'system' | 'prefix' | 'branches'>): FramedPrompt<Int32Array> {
    const frame = this.frameTokens(request.system);
    return { prefix: concat([frame.head, this.body(request.prefix)]), suffixes: request.branches.map((b) => concat([this.body(b.suffix), frame.tail])) };
  }

  async scoreText(request: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult> {
    if (request.branches.length === 0) throw new EngineError('invalid_request', 'at least one branch is needed');
    if (request.branches.some((b) => b.answers.length === 0 || b.answers.some((a) => a.length === 0))) {
      throw new EngineError('invalid_request', 'every branch needs at least one answer with at least one token');
    }
    const { prefix, suffixes } = this.tokenizeRequest(request);
    const longest = Math.max(...suffixes.map((s) => s.length));
    const needed = prefix.length + longest;
    if (needed > request.maxPromptTokens) {
      throw new EngineError('context_exceeded', `the prompt needs ${needed} tokens, more than the limit of ${request.maxPromptTokens}`, {
        tokens: needed,
        limit: request.maxPromptTokens,
        prefixTokens: prefix.length,
      });
    }
    const groups = groupBranchHeads(suffixes);
    let ticket: number;
    try {
      ticket = this.admit(request, {
        prefixTokens: prefix.length + groups.reduce((n, g) => n + g.head.length, 0),
        suffixTokens: groups.flatMap((g) => g.members.map((m) => m.rest.length)),
      });
    } catch (err) {
      if (err instanceof EngineError && (err.code === 'too_costly' || err.code === 'busy')) this.refusals[err.code === 'busy' ? 'busy' : 'tooCostly']++;
      throw err;
    }
    let outcome: ScoreOutcome;
    try {
      const sharedHead = this.frameTokens(request.system).head.length;
      outcome = await this.scoreGroups(prefix, groups, request, sharedHead, signal);
    } finally {
      this.ledger.done(ticket);
    }
    return {
      branches: outcome.logprobs.map((lp, i) => {
        let at = 0;
        return request.branches[i]!.answers.map((spellings) => logSumExp(Array.from(lp.subarray(at, (at += spellings.length)))));
      }),
      promptTokens: prefix.length + suffixes.reduce((n, s) => n + s.length, 0),
      prefixTokens: prefix.length,
      evaluatedTokens: outcome.evaluated,
      cachedTokens: outcome.cached,
    };
  }

  stats(): EngineStats {
    const native = this.engine.stats();
    const bound = livenessBoundMs(native, this.livenessFloorMs);
    return {
      ...native,
      workInHandMs: this.ledger.pendingMs(),
      admissionRefusals: { ...this.refusals },
      livenessBoundMs: bound,
      wedged: native.stalledMs > bound,
    };
  }

  /** What a decode costs here, as the scorer has measured it so far. */
  private cost(): DecodeCost {
    return this.engine.stats().cost;
  }

  /**
   * Counts the work in hand, or refuses it when the engine reckons it cannot be done in the time
   * the request has left. Until the cost of a decode is measured, everything is admitted.
   */
  private admit(request: TextScoreRequest, work: WorkShape): number {
    const tokens = work.prefixTokens + work.suffixTokens.reduce((n, t) => n + t, 0);
    if (request.maxRequestTokens && tokens > request.maxRequestTokens) {
      throw new EngineError(
        'too_costly',
        `this request runs ${tokens} prompt tokens through the model, more than this server's cap of ${request.maxRequestTokens} (ARBITRA_MAX_REQUEST_TOKENS)`,
        {
          tokens,
          maxRequestTokens: request.maxRequestTokens,
          branches: work.suffixTokens.length,
        },
      );
    }
    // Background work yields to all other: it is not held against a deadline, and nobody's request
    // waits behind it (the ledger's tickets start at 1; done(0) settles nothing).
    if (request.background) return 0;
    const cost = this.cost();
    const plan: DecodePlan = this.engineInfo;
    const ms = isMeasured(cost) ? workMs(cost, work, plan) : 0;
    const budgetMs = request.admitByCost ? (request.deadlineMs ?? Infinity) * DEADLINE_SHARE : Infinity;
    const verdict = this.ledger.admit(request.tenant ?? '', ms, budgetMs, plan.maxStepMs);
    if (verdict.admit) return verdict.ticket;
    const branches = work.suffixTokens.length;
    const details = { estimatedMs: Math.round(verdict.workMs), budgetMs: Math.round(budgetMs), branches };
    if (verdict.reason === 'too_costly') {
      const fit = branchesThatFit(cost, work, plan, budgetMs);
      throw new EngineError(
        'too_costly',
        `this request needs about ${seconds(verdict.workMs)} of engine time on this server (${work.prefixTokens} prompt tokens shared, then ${branches} branches of ${Math.round((tokens - work.prefixTokens) / branches)} tokens on average), more than the ${seconds(budgetMs)} admission allows of the time left before its deadline; about ${fit} of the ${branches} branches would fit`,
        { ...details, branchesThatFit: fit },
      );
    }
    throw new EngineError(
      'busy',
      `the engine holds more work than this request could finish behind before its deadline: about ${seconds(verdict.finishMs)} with its share of the engine, against ${seconds(budgetMs)}`,
      { ...details, finishMs: Math.round(verdict.finishMs), retryAfterSeconds: Math.max(1, Math.ceil(verdict.waitMs / 1000)) },
    );
  }

  /**
   * One engine job per group of branches that begin alike (branch-heads.ts), submitted together: the
   * engine decodes the request's prefix once and each group's head once. Reported as one job would:
   * every token evaluated, and the prefix tokens that were cached before the request. The frame's
   * head (`sharedHead` tokens) is all of it that another cache scope's prefixes may lend.
   */
  private async scoreGroups(
    prefix: Int32Array,
    groups: BranchGroup[],
    request: TextScoreRequest,
    sharedHead: number,
    signal?: AbortSignal,
  ): Promise<ScoreOutcome> {
    const candidates = request.branches.map((b) => Int32Array.from(b.answers.flat()));
    // Each group's job listens for the abort and stops listening when it settles: a request of many
    // questions holds more listeners at once than the 10 Node warns of, and leaks none.
    if (signal) setMaxListeners(Math.max(getMaxListeners(signal), groups.length + 1), signal);
    const outcomes = await Promise.all(
      groups.map((g) =>
        this.engine.score(
          concat([prefix, g.head]),
          g.members.map((m) => ({ suffix: m.rest, candidates: candidates[m.index]! })),
          { tenant: request.tenant, cacheScope: request.cacheScope, sharedHead, signal, background: request.background },
        ),
      ),
    );
    const logprobs = new Array<Float32Array>(request.branches.length);
    groups.forEach((g, k) => g.members.forEach((m, j) => (logprobs[m.index] = outcomes[k]!.logprobs[j]!)));
    return {
      logprobs,
      evaluated: outcomes.reduce((n, o) => n + o.evaluated, 0),
      // Later groups find the prefix their first sibling decoded: that is no cache hit of the request's.
      cached: Math.min(prefix.length, ...outcomes.map((o) => o.cached)),
    };
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}

export function createLocalEngine(modelPath: string, options: Partial<EngineOptions> = {}): Promise<LocalEngine> {
  return LocalEngine.create(modelPath, options);
}

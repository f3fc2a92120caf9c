// The engine's contract: what the HTTP side may ask of the one process that owns the model.
import type { NativeStats } from './native.js';

/**
 * How the KV cache is laid out. `copied`: one stream per sequence, a branch copies its prefix's
 * whole stream; scores never depend on the load, memory is contextSize × maxSequences (plus the
 * long lane). `shared`: one pool of kvCells cells, a branch shares its prefix's cells and adds only
 * its suffix; memory and work follow the tokens in use, one request may use the whole pool.
 */
export type KvLayout = 'copied' | 'shared';

/**
 * `exact`: batch-invariant CPU kernels (native/patches): tiled flash attention and the repacked
 * weights' GEMM for every batch shape, each row's reductions in a fixed order, so a token's result
 * never depends on what shares its batch or how its prompt was cut into decodes. `fast`: llama.cpp's
 * stock CPU kernels, which pick their code path by batch shape and round differently: scores move
 * with the load. On a GPU both are the backend's own kernels.
 */
export type Kernels = 'exact' | 'fast';
/** Whose matrix products the CPU backend runs for k-quant weights: the engine's own or llama.cpp's. */
export type CpuProducts = 'arbitra' | 'llama.cpp';

export interface EngineOptions {
  kvLayout: KvLayout;
  /**
   * Shared layout: cells in the pool; 0 = the longer of contextSize and longContextSize (at most the
   * model's training context and 32768) plus one batch.
   */
  kvCells: number;
  /**
   * Copied layout: KV cells of each sequence, the longest prompt (prefix + one suffix) the main lane
   * can score; every sequence has its own KV stream, so memory grows with contextSize × maxSequences.
   * Shared layout: with longContextSize, sizes the pool.
   */
  contextSize: number;
  /** Most tokens handed to one llama_decode call. */
  batchSize: number;
  /** Physical micro-batch size inside a decode. */
  microBatchSize: number;
  /**
   * Parallel sequences: one per cached or active prefix plus one per branch in flight. In the shared
   * layout they bound concurrency, not memory.
   */
  maxSequences: number;
  /**
   * Copied layout: tokens per sequence of the long lane, a second KV cache with few sequences for
   * prompts longer than contextSize (capped at the model's training context); 0 = none. Short
   * requests never touch it, so they keep contextSize's many small, cheap-to-copy streams. Shared
   * layout: the longest prompt the pool holds by default (see kvCells).
   */
  longContextSize: number;
  /** Sequences of the long lane (copied layout): long prompts are scored one prefix at a time. */
  longSequences: number;
  /** CPU threads for decoding. */
  threads: number;
  /** Layers offloaded to the GPU (ignored on a CPU build). */
  gpuLayers: number;
  /**
   * Flash attention asked of llama.cpp. Exact kernels turn `auto` into `on`: their attention is built
   * on it, and `auto` would let a device that declines the op turn it off unseen. `off` takes
   * llama.cpp's stock attention and leaves the promise (exact-path.ts says so).
   */
  flashAttention: 'auto' | 'on' | 'off';
  /**
   * The CPU backend's variant to load: `auto` takes the best this processor runs; a name pins one,
   * so that nodes with different processors give the same bits. One per process: the first engine's.
   */
  cpuVariant: string;
  /** Idle cached prefix tokens kept in the KV cache for the prefix cache. */
  prefixCacheTokens: number;
  kernels: Kernels;
  /**
   * Shared layout: attention reads each sequence's cells gathered in position order, in chunks that
   * start on a tile boundary, so a GPU's attention gives a row the same bits wherever its cells sit in
   * the pool. Unset: on exactly with exact kernels and layers on a GPU (the CPU's exact kernel
   * gathers by itself); true forces it on the CPU too, to hold it against the CPU's own gather.
   */
  kvGather?: boolean;
  /**
   * Liveness: the engine is wedged when work has waited this long with no decode finishing, plus
   * ten times what the decode in progress should take by the measured cost (liveness.ts).
   */
  livenessSeconds: number;
  /** Fault injection for the liveness tests, never set in service: the scheduler stops after this many decodes once loaded. 0 = off. */
  faultStallAfterDecodes: number;
  /**
   * A decode is filled only while its measured cost stays under this (its first piece goes whole):
   * how long a newcomer may wait behind work already running, against how much each decode carries.
   */
  stepTargetMs: number;
  /**
   * While every job in hand is one tenant's, a decode is filled up to this instead: fewer, fuller
   * decodes, at the cost of another tenant's newcomer waiting for at most one of them.
   */
  maxStepMs: number;
  /**
   * Check at load that the probe scores the same alone, crowded and after cached heads, and that
   * exact kernels agree with the stock ones (determinism-check.ts). The service asks for it unless
   * ARBITRA_DETERMINISM_CHECK=off (config.ts); an engine opened in code (a test, a bench) checks only
   * when asked, since the check costs seconds of every load.
   */
  checkDeterminism: boolean;
  /**
   * Fault injection for the tests, never set in service: the check sees the stock kernels' scores
   * this many nats away, as exact kernels that compute the wrong function would put them. 0 = off.
   */
  faultKernelsNats: number;
}

/** What the check found, reported at start-up, in /health and in /metrics. */
export interface DeterminismReport {
  kernels: Kernels;
  /** Every case gave the probe's log-probabilities bit for bit. */
  deterministic: boolean;
  /** The largest difference of a log-probability between the probe alone and any other case, in nats. */
  maxDifference: number;
  /**
   * By case: on its cached prefix, in a crowded batch, after a cached head shared with another
   * prompt, and after an early head of a cached prompt that ran on past the model's sliding window
   * (null when the model has no window, or such a prompt does not fit the engine's main lane).
   */
  differences: { cached: number; crowded: number; headCached: number; pastWindow: number | null };
  /** The largest difference between the exact kernels' probe and the stock kernels'; null when not compared (fast kernels). */
  stockDifference: number | null;
  /** Why the engine serves the stock kernels although exact ones were asked for; null when it serves what was asked. */
  fallback: string | null;
}

/** What an engine runs on, as /health, /metrics and the start-up line say it (exact-path.ts judges it). */
export interface ServedPath {
  kernels: Kernels;
  /** Flash attention as the contexts resolved it, not as it was asked for. */
  flashAttention: boolean;
  /** The shared pool's attention reads its cells gathered in position order (needs flash attention). */
  kvGather: boolean;
  /** The CPU backend's variant the process loaded (ModelFacts.cpuVariant), and those this processor runs. */
  cpuVariant: string;
  cpuVariants: string[];
  /** Whose products the CPU backend runs for quantized weights (ModelFacts.cpuProducts). */
  cpuProducts: CpuProducts;
  /** Why the promise of exact kernels does not hold on this path; empty when it does. */
  uncovered: string[];
}

export interface ModelFacts {
  path: string;
  /** sha256 of the model file: calibrations are bound to it. */
  sha256: string;
  fileSize: number;
  /** When the model file was last written (ISO 8601). */
  fileModified: string;
  architecture: string;
  description: string;
  parameters: number;
  trainingContext: number;
  /** Positions a sliding-window layer attends back over; 0 when no layer does. */
  slidingWindow: number;
  /** e.g. "Q4_K_M" */
  quantMethod: string;
  /** e.g. 4 for Q4_K_M, null when the file type has no single bit width */
  quantBits: number | null;
  vocabSize: number;
  backend: 'cpu' | 'cuda';
  gpuMemoryMb: number | null;
  llamaBuild: string;
  /**
   * The CPU backend's instruction-set variant the engine's process loaded ("haswell", "zen4"), or
   * "built-in" for a build with one CPU backend linked in. Bits are the same within a variant.
   */
  cpuVariant: string;
  /** The variants of this build this processor can run, best first (empty for a built-in backend). */
  cpuVariants: string[];
  /**
   * Whose matrix products the CPU backend runs for quantized weights (Q4_K, Q5_K, Q6_K, Q4_0, Q4_1,
   * Q5_0, Q5_1, Q8_0): the engine's own
   * (native/ggml-cpu, where the variant has AVX2, FMA and F16C) or llama.cpp's
   * (ARBITRA_INT8_KERNELS=off, another processor). Chosen when the weights load, for both kernel sets.
   */
  cpuProducts: CpuProducts;
  threads: number;
  /** The longest prompt (prefix + one suffix) the main lane takes. */
  contextSize: number;
  maxSequences: number;
  kvLayout: KvLayout;
  kernels: Kernels;
  /** Flash attention as asked of llama.cpp (exact kernels turn `auto` into `on`), and as the contexts resolved it. */
  flashAttentionAsked: 'auto' | 'on' | 'off';
  flashAttention: boolean;
  /** Every flash-attention node runs on its layer's device (a GPU may decline the op and hand it to the CPU). */
  flashAttentionOnLayerDevice: boolean;
  /** Whether the shared pool's attention reads its cells gathered (EngineOptions.kvGather), as resolved: it needs flash attention. */
  kvGather: boolean;
  /** Layers on a GPU, of those that can be (the blocks and the output layer); 0 on the CPU. */
  offloadedLayers: number;
  offloadableLayers: number;
  /** Attention head sizes of keys and values. */
  headSizeK: number;
  headSizeV: number;
  /** Experts of a mixture-of-experts model; 0 for a dense one. */
  experts: number;
  /** KV cells allocated over every lane, and their bytes. */
  kvCells: number;
  kvBytes: number;
  /** The longest prompt the engine takes at all (the long lane's); equal to contextSize when there is none. */
  longContextSize: number;
  /** 0 when there is no long lane. */
  longSequences: number;
  hasChatTemplate: boolean;
  /** How the scorer cuts work into decodes: prefix tokens per decode at most, and the time a decode is filled to. */
  prefixChunk: number;
  stepTargetMs: number;
  /** The bound of a decode while one tenant's work is alone in the engine (never below stepTargetMs). */
  maxStepMs: number;
}

/**
 * An answer label and every spelling of it that is one token of the model's vocabulary ("A" and
 * " A"; "Yes", " yes", "YES" ...). The first token is the canonical spelling, the one prompts show.
 */
export interface AnswerLabel {
  label: string;
  tokens: number[];
}

export interface EngineInfo extends ModelFacts {
  /** "chat" when prompts are framed by the model's chat template; "plain" for the fallback layout. */
  promptFrame: 'chat' | 'plain';
  /** Option labels in order (A, B, C, ..., then two-letter ones), as many as the vocabulary offers, at most 255. */
  optionLabels: AnswerLabel[];
  /** The digits 0-9 as answer labels (rating scales). */
  digitLabels: AnswerLabel[];
  yes: AnswerLabel;
  no: AnswerLabel;
  /** What the load-time check found (determinism-check.ts); null when it was not run. */
  determinism: DeterminismReport | null;
  /** The path the contexts resolved, and whether the exact kernels' promise covers it (exact-path.ts). */
  kernelPath: ServedPath;
}

/**
 * One branch: body text that follows the shared prefix within the same user turn. The engine adds
 * the frame (end of the user turn, start of the model's reply) after it.
 */
export interface TextBranch {
  suffix: string;
  /** The answers read at the branch's end, each as the token ids of its spellings. */
  answers: number[][];
}

export interface TextScoreRequest {
  /** Instructions the chat template places in its system turn (or above the plain layout). */
  system: string | null;
  /** Body text shared by every branch, at the start of the user turn; should end at a newline. */
  prefix: string;
  branches: TextBranch[];
  /** Reject with `context_exceeded` when prefix + the longest suffix exceed this many tokens. */
  maxPromptTokens: number;
  /** Whose request it is (an API key id): the engine shares its batches fairly between tenants. */
  tenant?: string;
  /**
   * Whose prefix cache the request's text is looked up in and left in (an account's id): beyond the
   * frame's head, which every request shares, no request reuses the cells of another scope's text,
   * waits on its decode, or is placed by it. Absent or empty: the global cache, for one trusted
   * owner's requests (`--prefix-cache-scope global`) and the engine's own work.
   */
  cacheScope?: string;
  /**
   * Milliseconds the request has left before its deadline: the engine drops its work when they run
   * out (a remote call carries them as its gRPC deadline). Absent: no deadline.
   */
  deadlineMs?: number;
  /** Refuse (`too_costly`, `busy`), before any of it is done, work the engine reckons it cannot finish before the deadline. */
  admitByCost?: boolean;
  /** Refuse (`too_costly`) a request whose prompt tokens, its prefix once plus every suffix, exceed this; absent or 0: no cap. */
  maxRequestTokens?: number;
  /**
   * Nobody waits for it (the self-test after start-up): the engine decodes it only while no other
   * job is in hand, and it is neither admitted by cost nor counted in the work in hand.
   */
  background?: boolean;
}

export interface TextScoreResult {
  /** Per branch, per answer: log P(the reply starts with one of the answer's spellings). */
  branches: number[][];
  /** Tokens of the prompt as charged: prefix once plus every suffix. */
  promptTokens: number;
  prefixTokens: number;
  /** Tokens the engine actually ran through the model for this request. */
  evaluatedTokens: number;
  /** Prefix tokens reused from the prefix cache. */
  cachedTokens: number;
}

/**
 * `too_costly`: the work alone would outlast the time the request has; `busy`: it would fit alone,
 * but not behind the work the engine already holds (retry later); `deadline_exceeded`: no answer
 * came before the request's deadline, and the engine dropped the work.
 */
export type EngineErrorCode =
  | 'context_exceeded'
  | 'too_costly'
  | 'busy'
  | 'invalid_request'
  | 'load_failed'
  | 'unavailable'
  | 'closed'
  | 'cancelled'
  | 'deadline_exceeded'
  | 'internal';

export class EngineError extends Error {
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

/** The scorer's counters, the work the engine has admitted and not yet done, and its liveness. */
export interface EngineStats extends NativeStats {
  /** Estimated engine milliseconds of it, as admission reckons it. */
  workInHandMs: number;
  /** Requests refused before any work: too costly for their deadline alone, or behind the work in hand (busy). */
  admissionRefusals: { tooCostly: number; busy: number };
  /** How long work may wait with no decode finishing before the engine counts as wedged (liveness.ts). */
  livenessBoundMs: number;
  /** stalledMs has passed livenessBoundMs: the engine holds work it is not doing. */
  wedged: boolean;
}

/** What the HTTP workers use; implemented in-process (tests, single process) and over the engine service (cluster, remote engines). */
export interface EngineService {
  info(): Promise<EngineInfo>;
  /** Rejects with `cancelled` once `signal` aborts; the engine drops the rest of the work at its next batch. */
  scoreText(request: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult>;
}

/** The rejection of work whose signal aborted. */
export function cancelledError(): EngineError {
  return new EngineError('cancelled', 'the request was cancelled');
}

/** The longest prompt (prefix + one suffix) the engine can score for this model. */
export function promptCapacity(facts: Pick<ModelFacts, 'trainingContext' | 'contextSize' | 'longContextSize'>): number {
  return Math.min(facts.trainingContext, Math.max(facts.contextSize, facts.longContextSize));
}

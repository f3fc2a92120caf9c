// The engine's contract: what the HTTP side may ask of the one process that owns the model.

export interface EngineOptions {
  /**
   * KV cells of each sequence: the longest prompt (prefix + one suffix) the engine can score.
   * Every sequence has its own KV stream, so memory grows with contextSize × maxSequences.
   */
  contextSize: number;
  /** Most tokens handed to one llama_decode call. */
  batchSize: number;
  /** Physical micro-batch size inside a decode. */
  microBatchSize: number;
  /** Parallel sequences: one per cached or active prefix plus one per branch in flight. */
  maxSequences: number;
  /** CPU threads for decoding. */
  threads: number;
  /** Layers offloaded to the GPU (ignored on a CPU build). */
  gpuLayers: number;
  /** Idle cached prefix tokens kept in the KV cache for the prefix cache. */
  prefixCacheTokens: number;
}

export interface ModelFacts {
  path: string;
  fileSize: number;
  /** When the model file was last written (ISO 8601). */
  fileModified: string;
  architecture: string;
  description: string;
  parameters: number;
  trainingContext: number;
  /** e.g. "Q4_K_M" */
  quantMethod: string;
  /** e.g. 4 for Q4_K_M, null when the file type has no single bit width */
  quantBits: number | null;
  vocabSize: number;
  backend: 'cpu' | 'cuda';
  gpuMemoryMb: number | null;
  llamaBuild: string;
  threads: number;
  contextSize: number;
  maxSequences: number;
  hasChatTemplate: boolean;
}

/** A single-token answer label and its token id in the model's vocabulary. */
export interface AnswerLabel {
  label: string;
  token: number;
}

/**
 * How a prompt is laid out around the model's chat template: the text before the user message
 * and the text after it (end of the user turn plus the start of the model's turn).
 */
export interface PromptFrame {
  head: string;
  tail: string;
  /** true when the model had no chat template and the plain layout is used */
  plain: boolean;
}

export interface EngineInfo extends ModelFacts {
  frame: PromptFrame;
  /** Single-token option labels in order (A, B, C, ...), as many as the vocabulary offers, at most 255. */
  optionLabels: AnswerLabel[];
  yes: AnswerLabel;
  no: AnswerLabel;
}

export interface TextBranch {
  /** Text that follows the shared prefix for this branch; never empty. */
  suffix: string;
  /** Token ids whose log-probabilities are read at the branch's last position. */
  candidates: number[];
}

export interface TextScoreRequest {
  /** Shared text, tokenised with the model's BOS; should end at a newline. */
  prefix: string;
  branches: TextBranch[];
  /** Reject with `context_exceeded` when prefix + the longest suffix exceed this many tokens. */
  maxPromptTokens: number;
}

export interface TextScoreResult {
  /** Per branch, the log-probability of each candidate (same order as `candidates`). */
  branches: number[][];
  /** Tokens of the prompt as charged: prefix once plus every suffix. */
  promptTokens: number;
  prefixTokens: number;
  /** Tokens the engine actually ran through the model for this request. */
  evaluatedTokens: number;
  /** Prefix tokens reused from the prefix cache. */
  cachedTokens: number;
}

export type EngineErrorCode = 'context_exceeded' | 'invalid_request' | 'load_failed' | 'unavailable' | 'closed' | 'internal';

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

/** What the HTTP workers use; implemented in-process (tests, single process) and over IPC (cluster). */
export interface EngineService {
  info(): Promise<EngineInfo>;
  scoreText(request: TextScoreRequest): Promise<TextScoreResult>;
}

// Typed wrapper over the addon: one loaded model, one KV cache, one scoring loop.
import fs from 'node:fs';
import os from 'node:os';
import type { ChatMessage } from './frame.js';
import { modelChecksum } from '../models/checksum.js';
import { loadAddon, type NativeEngine, type NativeStats } from './native.js';
import { cancelledError, EngineError, type EngineErrorCode, type EngineOptions, type ModelFacts } from './types.js';

export const DEFAULT_ENGINE_OPTIONS: EngineOptions = {
  kvLayout: 'shared',
  kvCells: 0,
  contextSize: 4096,
  batchSize: 2048,
  microBatchSize: 512,
  maxSequences: 64,
  longContextSize: 32768,
  longSequences: 2,
  threads: 0,
  gpuLayers: 999,
  flashAttention: 'auto',
  cpuVariant: 'auto',
  prefixCacheTokens: 4096,
  kernels: 'exact',
  livenessSeconds: 30,
  faultStallAfterDecodes: 0,
  stepTargetMs: 250,
  maxStepMs: 1000,
  checkDeterminism: false,
  faultKernelsNats: 0,
};

export interface ScoreBranchTokens {
  suffix: Int32Array;
  candidates: Int32Array;
}

export interface ScoreOutcome {
  /** Per branch, per candidate: log-probability under the full-vocabulary softmax. */
  logprobs: Float32Array[];
  /** Tokens run through the model for this call. */
  evaluated: number;
  /** Prefix tokens reused from the KV cache. */
  cached: number;
}

const KNOWN_CODES = new Set<EngineErrorCode>(['context_exceeded', 'invalid_request', 'load_failed', 'unavailable', 'closed', 'cancelled', 'internal']);

function asEngineError(err: unknown): EngineError {
  if (err instanceof EngineError) return err;
  const e = err as Error & { code?: string };
  const code = KNOWN_CODES.has(e.code as EngineErrorCode) ? (e.code as EngineErrorCode) : e instanceof TypeError ? 'invalid_request' : 'internal';
  return new EngineError(code, e.message);
}

export interface ScoreOptions {
  /** Whose request it is: batches are shared fairly between tenants. */
  tenant?: string;
  /**
   * Whose prefix cache the prefix is looked up in and left in (TextScoreRequest.cacheScope); absent
   * or empty: the global one. Of another scope's cached prefixes only the first `sharedHead` tokens
   * are reused (and only where both prefixes share them): the frame's head, the same for everyone.
   */
  cacheScope?: string;
  sharedHead?: number;
  signal?: AbortSignal;
  /** Scored on the stock-kernel lane of withReference(), not the engine's own. */
  reference?: boolean;
  /** Nobody waits for it (the self-test): decoded only while no other job is in hand. */
  background?: boolean;
}

/** What the addon reported at load, typed, with the file's own identity beside it. */
async function modelFacts(modelPath: string, raw: Record<string, unknown>): Promise<ModelFacts> {
  const file = fs.statSync(modelPath);
  return {
    path: modelPath,
    sha256: await modelChecksum(modelPath),
    fileSize: file.size,
    fileModified: file.mtime.toISOString(),
    architecture: String(raw.architecture),
    description: String(raw.description),
    parameters: Number(raw.parameters),
    trainingContext: Number(raw.trainingContext),
    slidingWindow: Number(raw.slidingWindow),
    quantMethod: String(raw.quantMethod),
    quantBits: raw.quantBits === null ? null : Number(raw.quantBits),
    vocabSize: Number(raw.vocabSize),
    backend: raw.backend === 'cuda' ? 'cuda' : 'cpu',
    gpuMemoryMb: raw.gpuMemoryMb === null ? null : Number(raw.gpuMemoryMb),
    llamaBuild: String(raw.llamaBuild),
    cpuVariant: String(raw.cpuVariant),
    cpuVariants: Array.isArray(raw.cpuVariants) ? raw.cpuVariants.map(String) : [],
    cpuProducts: raw.cpuProducts === 'arbitra' ? 'arbitra' : 'llama.cpp',
    threads: Number(raw.threads),
    contextSize: Number(raw.contextSize),
    maxSequences: Number(raw.maxSequences),
    kvLayout: raw.kvLayout === 'shared' ? 'shared' : 'copied',
    kernels: raw.kernels === 'fast' ? 'fast' : 'exact',
    flashAttentionAsked: raw.flashAttentionAsked === 'on' ? 'on' : raw.flashAttentionAsked === 'off' ? 'off' : 'auto',
    flashAttention: raw.flashAttention === true,
    flashAttentionOnLayerDevice: raw.flashAttentionOnLayerDevice === true,
    kvGather: raw.kvGather === true,
    offloadedLayers: Number(raw.offloadedLayers),
    offloadableLayers: Number(raw.offloadableLayers),
    headSizeK: Number(raw.headSizeK),
    headSizeV: Number(raw.headSizeV),
    experts: Number(raw.experts),
    kvCells: Number(raw.kvCells),
    kvBytes: Number(raw.kvBytes),
    longContextSize: Number(raw.longContextSize),
    longSequences: Number(raw.longSequences),
    hasChatTemplate: Boolean(raw.hasChatTemplate),
    prefixChunk: Number(raw.prefixChunk),
    stepTargetMs: Number(raw.stepTargetMs),
    maxStepMs: Number(raw.maxStepMs),
  };
}

export class LlamaEngine {
  private nextTicket = 1;

  private constructor(
    private readonly native: NativeEngine,
    readonly facts: ModelFacts,
  ) {}

  static async load(modelPath: string, options: Partial<EngineOptions> = {}): Promise<LlamaEngine> {
    const opts = { ...DEFAULT_ENGINE_OPTIONS, ...options };
    if (opts.threads <= 0) opts.threads = os.availableParallelism();
    const native = new (loadAddon().Engine)();
    let raw: Record<string, unknown>;
    try {
      raw = await native.load(modelPath, { ...opts });
    } catch (err) {
      throw new EngineError('load_failed', (err as Error).message, { path: modelPath });
    }
    return new LlamaEngine(native, await modelFacts(modelPath, raw));
  }

  tokenize(text: string, opts: { addSpecial?: boolean; parseSpecial?: boolean } = {}): Int32Array {
    try {
      return this.native.tokenize(text, opts.addSpecial ?? false, opts.parseSpecial ?? true);
    } catch (err) {
      throw asEngineError(err);
    }
  }

  detokenize(tokens: Int32Array | number[]): string {
    try {
      return this.native.detokenize(tokens instanceof Int32Array ? tokens : Int32Array.from(tokens));
    } catch (err) {
      throw asEngineError(err);
    }
  }

  /** The model's chat template applied to these messages (assistant turn opened); null when the model has none. */
  applyChatTemplate(messages: ChatMessage[]): string | null {
    return this.native.applyChatTemplate(messages);
  }

  /**
   * Scores every branch against the shared prefix in batched decodes: the prefix is evaluated once
   * (or found in the prefix cache) and each branch's suffix shares its KV cells.
   */
  async score(prefix: Int32Array, branches: ScoreBranchTokens[], opts: ScoreOptions = {}): Promise<ScoreOutcome> {
    const { signal } = opts;
    if (signal?.aborted) throw cancelledError();
    // Tickets wrap within uint32 and skip 0, which means "not cancellable".
    const ticket = this.nextTicket;
    this.nextTicket = (this.nextTicket % 0xffff_fffe) + 1;
    const cancel = (): void => void this.native.cancel(ticket);
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      return await this.native.score(prefix, branches, {
        tenant: opts.tenant,
        ticket,
        reference: opts.reference,
        background: opts.background,
        scope: opts.cacheScope,
        sharedHead: opts.sharedHead,
      });
    } catch (err) {
      throw asEngineError(err);
    } finally {
      signal?.removeEventListener('abort', cancel);
    }
  }

  stats(): NativeStats {
    return this.native.stats();
  }

  /** Fault injection for the liveness tests (EngineOptions.faultStallAfterDecodes), never used in service. */
  faultStall(decodes: number): void {
    this.native.faultStall(decodes);
  }

  /** The idle cached prefixes are dropped before the next decode, so the next job decodes cold. */
  forgetCache(): void {
    this.native.forgetCache();
  }

  /**
   * Runs `use` with a small lane on llama.cpp's stock kernels open beside the engine's (scores with
   * `reference: true` go there), and frees it after.
   */
  async withReference<T>(use: () => Promise<T>): Promise<T> {
    try {
      this.native.openReference();
    } catch (err) {
      throw asEngineError(err);
    }
    try {
      return await use();
    } finally {
      this.native.closeReference();
    }
  }

  close(): Promise<void> {
    return this.native.close();
  }
}

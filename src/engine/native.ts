// The raw addon binding. Only src/engine/llama-engine.ts may use it.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { packageRoot } from '../paths.js';
import { CPU_ADDON_FILE, cpuFallbackLine, loadFailureReason, noGpuReason } from './addon-choice.js';

export interface NativeScoreOutcome {
  logprobs: Float32Array[];
  evaluated: number;
  cached: number;
}

export interface NativeStats {
  decodes: number;
  tokensEvaluated: number;
  branchesScored: number;
  jobsDone: number;
  jobsCancelled: number;
  lastBatchTokens: number;
  lastBatchBranches: number;
  queueDepth: number;
  cachedPrefixes: number;
  /** KV cells the prefixes hold between decodes, and the most a decode has used; upper bounds (a head shared by cell reference counts once per prefix). */
  kvCellsHeld: number;
  kvCellsPeak: number;
  /** Seconds spent in llama_decode, and reading branches' log-probs out of its logits. */
  decodeSeconds: number;
  readoutSeconds: number;
  /** What a decode costs, fitted to the decodes so far (every part 0 until it can tell them apart). */
  cost: { perDecodeMs: number; perTokenMs: number; perRowMs: number; decodesObserved: number };
  /** Milliseconds work has waited with no decode finishing (0 while the engine holds none), over its lanes. */
  stalledMs: number;
  /** Tokens and logits rows of the decode running now; 0 between decodes. */
  stepTokens: number;
  stepRows: number;
  /** Decodes filled to the max step, one tenant's work being alone in the engine. */
  loneDecodes: number;
  pending: number;
}

export interface NativeEngine {
  load(path: string, options: Record<string, number | string | boolean>): Promise<Record<string, unknown>>;
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): Int32Array;
  detokenize(tokens: Int32Array): string;
  applyChatTemplate(messages: { role: string; content: string }[]): string | null;
  /**
   * A non-zero ticket lets cancel(ticket) drop the job at the next batch boundary; `reference` scores
   * on the lane openReference() opened; `background` work is decoded only while no other job is in hand.
   * `scope` (hashed) names whose prefix cache the prefix is kept in, none or empty the global one;
   * another scope's cached prefix lends at most its first `sharedHead` tokens (default 0).
   */
  score(
    prefix: Int32Array,
    branches: { suffix: Int32Array; candidates: Int32Array }[],
    options?: { tenant?: string; ticket?: number; reference?: boolean; background?: boolean; scope?: string; sharedHead?: number },
  ): Promise<NativeScoreOutcome>;
  /** false when no unsettled job holds the ticket. */
  cancel(ticket: number): boolean;
  stats(): NativeStats;
  /** Fault injection for the liveness tests: every lane's scheduler stops after `decodes` more decodes. */
  faultStall(decodes: number): void;
  /** The idle cached prefixes are dropped before the next decode: the next job finds none. */
  forgetCache(): void;
  /** A small lane on llama.cpp's stock kernels beside the engine's, for comparing their scores; closeReference() frees it. */
  openReference(): void;
  closeReference(): void;
  close(): Promise<void>;
}

export interface NativeAddon {
  Engine: new () => NativeEngine;
  llamaBuild: string;
  backend: 'cpu' | 'cuda';
  /** The GPUs the backend finds, by name: none on a CPU build. */
  gpuDevices(): string[];
  /** The CPU backend's variants beside the addon, best for this processor first; none where it is built in. */
  cpuVariants(): { name: string; runnable: boolean }[];
}

let addon: NativeAddon | undefined;

/** The addon in `file`, or an error that says how to build it. */
function requireAddon(file: string): NativeAddon {
  try {
    return createRequire(import.meta.url)(file) as NativeAddon;
  } catch (err) {
    throw new Error(`cannot load the engine addon ${file}: ${(err as Error).message} (run \`npm install\` to build it)`);
  }
}

/**
 * The addon ARBITRA_ADDON names, or build/Release/arbitra.node. Where a CPU addon lies beside it (the
 * CUDA image), a CUDA addon that cannot load or finds no GPU gives way to it, with one line saying why
 * (src/engine/addon-choice.ts).
 */
export function loadAddon(): NativeAddon {
  if (addon) return addon;
  const file = process.env.ARBITRA_ADDON ?? path.join(packageRoot(), 'build', 'Release', 'arbitra.node');
  const cpuFile = path.join(path.dirname(file), CPU_ADDON_FILE);
  if (path.resolve(file) === path.resolve(cpuFile) || !fs.existsSync(cpuFile)) return (addon = requireAddon(file));
  let reason: string;
  try {
    const gpuAddon = createRequire(import.meta.url)(file) as NativeAddon;
    const noGpu = noGpuReason(gpuAddon.backend, gpuAddon.backend === 'cuda' ? gpuAddon.gpuDevices() : []);
    if (noGpu === null) return (addon = gpuAddon);
    reason = noGpu;
  } catch (err) {
    reason = loadFailureReason((err as Error).message);
  }
  addon = requireAddon(cpuFile);
  process.stderr.write(`${cpuFallbackLine(reason)}\n`);
  return addon;
}

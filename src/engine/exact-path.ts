// Whether the promise of exact kernels covers the path an engine's contexts resolved. The kernels
// were made batch-invariant on some paths only (docs/architecture.md, "On CUDA"): flash attention
// on, and on a GPU quantized weights through MMQ, the MMA attention kernel at the head sizes it
// takes at one tile width, every layer on the card and the shared pool gathered. Elsewhere the
// stock kernels still pick their arithmetic by batch shape, so a probe that happened to agree at
// load would promise what the next crowd may break: such a path is reported, never promised.
import type { ModelFacts, ServedPath } from './types.js';

/** Head sizes CUDA's MMA attention kernel takes at its one large-batch tile width (V as large as K). */
export const CUDA_COVERED_HEAD_SIZES: readonly number[] = [64, 80, 96, 112, 128, 256];
/** Weights CUDA multiplies with kernels chosen by batch width (mmvf, mmf, cuBLAS), not MMQ. */
const FLOAT_WEIGHTS = new Set(['F32', 'F16', 'BF16']);

export type PathFacts = Pick<
  ModelFacts,
  | 'backend'
  | 'kernels'
  | 'kvLayout'
  | 'quantMethod'
  | 'flashAttention'
  | 'flashAttentionOnLayerDevice'
  | 'kvGather'
  | 'offloadedLayers'
  | 'offloadableLayers'
  | 'experts'
  | 'headSizeK'
  | 'headSizeV'
  | 'cpuVariant'
  | 'cpuVariants'
  | 'cpuProducts'
>;

/** Why exact kernels on this path are not promised to give the same bits at every load; empty when they are. */
export function uncoveredReasons(f: PathFacts): string[] {
  if (f.kernels === 'fast') return ["fast kernels (--kernels fast): llama.cpp's stock attention and ops, chosen by batch shape"];
  const why: string[] = [];
  if (!f.flashAttention) {
    why.push("flash attention is off, so attention takes llama.cpp's stock path, whose sums follow where a row's cells sit and how many there are");
  }
  if (f.backend !== 'cuda' || f.offloadedLayers === 0) return why;
  if (f.offloadedLayers < f.offloadableLayers) {
    why.push(`a partial offload (${f.offloadedLayers} of ${f.offloadableLayers} layers on the GPU): the split between devices is not covered`);
  }
  if (f.flashAttention && !f.flashAttentionOnLayerDevice)
    why.push("the GPU declined this model's flash attention, which runs on another device than its layers");
  if (f.kvLayout === 'shared' && !f.kvGather) why.push("the shared pool's gather is off, so a row's sums on the GPU follow where its cells sit in the pool");
  if (FLOAT_WEIGHTS.has(f.quantMethod)) why.push(`${f.quantMethod} weights, whose products CUDA picks by batch width (mmvf, mmf, cuBLAS)`);
  if (f.experts > 0) why.push(`a mixture of ${f.experts} experts, whose products (mul_mat_id) CUDA picks by batch width`);
  if (!CUDA_COVERED_HEAD_SIZES.includes(f.headSizeK) || f.headSizeV !== f.headSizeK) {
    why.push(
      `attention heads of ${f.headSizeK} (keys) and ${f.headSizeV} (values), outside the sizes CUDA's attention kernel takes at one tile width (${CUDA_COVERED_HEAD_SIZES.join(', ')}, values as keys)`,
    );
  }
  return why;
}

export function servedPath(f: PathFacts): ServedPath {
  return {
    kernels: f.kernels,
    flashAttention: f.flashAttention,
    kvGather: f.kvGather,
    cpuVariant: f.cpuVariant,
    cpuVariants: f.cpuVariants,
    cpuProducts: f.cpuProducts,
    uncovered: uncoveredReasons(f),
  };
}

/** The promise covers the path: no reason says otherwise. */
export function isCovered(path: ServedPath): boolean {
  return path.uncovered.length === 0;
}

/**
 * Whether the engine keeps the promise: its path is covered and its check at load found every case
 * bit for bit. False on an uncovered path whatever the check saw; null when the check did not run
 * on a covered path.
 */
export function keepsPromise(path: ServedPath | null, checked: boolean | null): boolean | null {
  if (path && !isCovered(path)) return false;
  return checked;
}

/**
 * What decides an answer's bits besides the model file: engines that differ in it can answer the
 * same request differently, so the engines of one node must agree on it (src/cluster/engines.ts).
 * The KV layout and the thread count are not in it: the exact kernels give the same bits in either.
 */
export function arithmeticOf(backend: ModelFacts['backend'], p: ServedPath): string {
  return `${backend} backend, ${p.kernels} kernels, flash attention ${p.flashAttention ? 'on' : 'off'}, CPU variant ${p.cpuVariant}, ${productsOwner(p)} int8 products`;
}

function productsOwner(p: Pick<ServedPath, 'cpuProducts'>): string {
  return p.cpuProducts === 'arbitra' ? "the engine's own" : "llama.cpp's";
}

/** "zen4 (of zen4, haswell on this processor)": the one loaded, and what a pin could choose here. */
export function cpuVariantLine(p: Pick<ServedPath, 'cpuVariant' | 'cpuVariants'>): string {
  return p.cpuVariants.length > 0 ? `${p.cpuVariant} (of ${p.cpuVariants.join(', ')} on this processor)` : p.cpuVariant;
}

/** The start-up lines that say which path runs, and a warning where the promise does not cover it. */
export function pathReport(p: ServedPath): string[] {
  const lines = [
    `path: ${p.kernels} kernels, flash attention ${p.flashAttention ? 'on' : 'off'}, shared pool gather ${p.kvGather ? 'on' : 'off'} (as resolved), CPU variant ${cpuVariantLine(p)}, ${productsOwner(p)} int8 products on the CPU`,
  ];
  if (p.kernels === 'exact' && !isCovered(p)) {
    lines.push(`WARNING: the exact kernels run on a path their promise does not cover, so /health says deterministic: false: ${p.uncovered.join('; ')}`);
  }
  return lines;
}

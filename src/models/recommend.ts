// Instruction models to serve decisions with on a GPU, by its memory, with the engine settings that
// fit them beside the service's KV cache.
//
// What is known and what is not: licences, parameter counts and architectures (layers, KV heads,
// head size, training context) are as the upstream model cards and config files state them, taken
// from memory of those cards and not re-checked from this machine (it has no internet). File sizes
// are estimates, `parameters × bits per weight ÷ 8` with llama.cpp's average bits per weight of the
// quant mix (Q4_K_M ≈ 4.85, Q6_K ≈ 6.56, Q8_0 = 8.5); the real file differs by a few percent, and
// the pull checks the hub's own size and digest. Decision quality is not measured here for any of
// them: `npm run bench:quality` with BENCH_MODELS set to the pulled name measures it.
//
// Memory: the file (weights, all layers offloaded) + the KV cache, one f16 K and V row per layer per
// cell (`layers × KV heads × head size × 2 × 2 bytes` a cell) for the cells of the shared pool
// (`--kv-cells`; the sequences share it, so `--max-sequences` costs no memory) + a fixed 1.5 GiB for
// the CUDA context and compute buffers (an assumption, not a measurement).

export interface Recommendation {
  /** The store name the pull gives it. */
  name: string;
  ref: string;
  /** The GPU memory class it is chosen for, GiB. */
  gpuGiB: number;
  model: string;
  quant: 'Q4_K_M' | 'Q6_K' | 'Q8_0';
  licence: string;
  /** Billions of parameters, as the model card states. */
  paramsB: number;
  layers: number;
  kvHeads: number;
  headDim: number;
  trainContext: number;
  quality: string;
}

const GiB = 1024 ** 3;
export const OVERHEAD_BYTES = 1.5 * GiB;
const BITS_PER_WEIGHT: Record<Recommendation['quant'], number> = { Q4_K_M: 4.85, Q6_K: 6.56, Q8_0: 8.5 };
const NOT_MEASURED = 'not measured here';

export const RECOMMENDATIONS: readonly Recommendation[] = [
  {
    name: 'qwen2.5-7b-instruct-q4_k_m',
    ref: 'hf:bartowski/Qwen2.5-7B-Instruct-GGUF:Q4_K_M',
    gpuGiB: 8,
    model: 'Qwen2.5-7B-Instruct',
    quant: 'Q4_K_M',
    licence: 'Apache-2.0',
    paramsB: 7.61,
    layers: 28,
    kvHeads: 4,
    headDim: 128,
    trainContext: 32768,
    quality: NOT_MEASURED,
  },
  {
    name: 'meta-llama-3.1-8b-instruct-q4_k_m',
    ref: 'hf:bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M',
    gpuGiB: 8,
    model: 'Llama-3.1-8B-Instruct',
    quant: 'Q4_K_M',
    licence: 'Llama 3.1 Community License',
    paramsB: 8.03,
    layers: 32,
    kvHeads: 8,
    headDim: 128,
    trainContext: 131072,
    quality: NOT_MEASURED,
  },
  {
    name: 'mistral-nemo-instruct-2407-q4_k_m',
    ref: 'hf:bartowski/Mistral-Nemo-Instruct-2407-GGUF:Q4_K_M',
    gpuGiB: 16,
    model: 'Mistral-Nemo-Instruct-2407 (12B)',
    quant: 'Q4_K_M',
    licence: 'Apache-2.0',
    paramsB: 12.2,
    layers: 40,
    kvHeads: 8,
    headDim: 128,
    trainContext: 131072,
    quality: NOT_MEASURED,
  },
  {
    name: 'qwen2.5-14b-instruct-q4_k_m',
    ref: 'hf:bartowski/Qwen2.5-14B-Instruct-GGUF:Q4_K_M',
    gpuGiB: 16,
    model: 'Qwen2.5-14B-Instruct',
    quant: 'Q4_K_M',
    licence: 'Apache-2.0',
    paramsB: 14.7,
    layers: 48,
    kvHeads: 8,
    headDim: 128,
    trainContext: 32768,
    quality: NOT_MEASURED,
  },
  {
    name: 'qwen2.5-14b-instruct-q8_0',
    ref: 'hf:bartowski/Qwen2.5-14B-Instruct-GGUF:Q8_0',
    gpuGiB: 24,
    model: 'Qwen2.5-14B-Instruct',
    quant: 'Q8_0',
    licence: 'Apache-2.0',
    paramsB: 14.7,
    layers: 48,
    kvHeads: 8,
    headDim: 128,
    trainContext: 32768,
    quality: NOT_MEASURED,
  },
  {
    name: 'qwen2.5-32b-instruct-q4_k_m',
    ref: 'hf:bartowski/Qwen2.5-32B-Instruct-GGUF:Q4_K_M',
    gpuGiB: 24,
    model: 'Qwen2.5-32B-Instruct',
    quant: 'Q4_K_M',
    licence: 'Apache-2.0',
    paramsB: 32.5,
    layers: 64,
    kvHeads: 8,
    headDim: 128,
    trainContext: 32768,
    quality: NOT_MEASURED,
  },
  {
    name: 'qwen2.5-32b-instruct-q8_0',
    ref: 'hf:bartowski/Qwen2.5-32B-Instruct-GGUF:Q8_0',
    gpuGiB: 48,
    model: 'Qwen2.5-32B-Instruct',
    quant: 'Q8_0',
    licence: 'Apache-2.0',
    paramsB: 32.5,
    layers: 64,
    kvHeads: 8,
    headDim: 128,
    trainContext: 32768,
    quality: NOT_MEASURED,
  },
  {
    name: 'llama-3.3-70b-instruct-q4_k_m',
    ref: 'hf:bartowski/Llama-3.3-70B-Instruct-GGUF:Q4_K_M',
    gpuGiB: 48,
    model: 'Llama-3.3-70B-Instruct',
    quant: 'Q4_K_M',
    licence: 'Llama 3.3 Community License',
    paramsB: 70.6,
    layers: 80,
    kvHeads: 8,
    headDim: 128,
    trainContext: 131072,
    quality: NOT_MEASURED,
  },
  {
    name: 'llama-3.3-70b-instruct-q6_k',
    ref: 'hf:bartowski/Llama-3.3-70B-Instruct-GGUF:Q6_K',
    gpuGiB: 80,
    model: 'Llama-3.3-70B-Instruct',
    quant: 'Q6_K',
    licence: 'Llama 3.3 Community License',
    paramsB: 70.6,
    layers: 80,
    kvHeads: 8,
    headDim: 128,
    trainContext: 131072,
    quality: NOT_MEASURED,
  },
];

/** About the file's size: parameters × the quant's average bits per weight. */
export function estimatedFileBytes(r: Recommendation): number {
  return Math.round((r.paramsB * 1e9 * BITS_PER_WEIGHT[r.quant]) / 8);
}

/** f16 K and V for one cell in every layer. */
export function kvBytesPerCell(r: Recommendation): number {
  return r.layers * r.kvHeads * r.headDim * 2 * 2;
}

export interface EngineFit {
  maxSequences: number;
  /** Cells of the shared KV pool. */
  kvCells: number;
  /** File + KV + overhead. */
  totalBytes: number;
}

// Every recommendation serves 64 sequences at once (a 4-question × 4-pass decision takes 17): in
// the shared pool they share the cells, so they cost no memory of their own.
const SEQUENCES = 64;
// The pool holds at least one 4,096-token prompt and a batch beside it, and at most 64 such prompts.
const MIN_CELLS = 4096 + 2048;
const MAX_CELLS = 64 * 4096;

/**
 * The most the service can run with this model in `memoryBytes`: 64 sequences over the largest
 * pool that fits (in steps of 1,024 cells, up to 64 × 4,096); null when not even one 4,096-token
 * prompt and a batch fit.
 */
export function engineFit(r: Recommendation, memoryBytes: number): EngineFit | null {
  const free = memoryBytes - estimatedFileBytes(r) - OVERHEAD_BYTES;
  const perCell = kvBytesPerCell(r);
  const kvCells = Math.min(MAX_CELLS, Math.floor(free / perCell / 1024) * 1024);
  if (kvCells < MIN_CELLS) return null;
  return { maxSequences: SEQUENCES, kvCells, totalBytes: estimatedFileBytes(r) + kvCells * perCell + OVERHEAD_BYTES };
}

/** The `arbitra serve` flags of a fit. */
export function serveFlags(fit: EngineFit): string {
  return `--max-sequences ${fit.maxSequences} --kv-cells ${fit.kvCells}`;
}

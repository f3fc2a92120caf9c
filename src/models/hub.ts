// Resolves an `hf:` reference to the files to download, with the sha256 and size the Hugging Face
// hub states for each (a GGUF is stored in LFS: its `lfs.oid` is the file's sha256).
//
// The hub's tree listing (`GET {HF_ENDPOINT}/api/models/{repo}/tree/main?recursive=true`) names
// every file; the quant is then picked as llama.cpp's `-hf` picks it: a tag given is matched
// case-insensitively as `TAG.` or `TAG-` in a file name, and without a tag Q4_K_M is preferred, then
// Q8_0, then the first GGUF. Projector, imatrix and draft files (`mmproj`, `imatrix`, `mtp-`, ...)
// are never the model. A split model is all of its parts, part 1 first. Each file then downloads
// from `{HF_ENDPOINT}/{repo}/resolve/main/{file}`, which redirects to the hub's CDN.
import { failureReason } from './failure.js';
import { ModelRefError, splitInfo, splitParts, type ModelRef } from './ref.js';

export const DEFAULT_HF_ENDPOINT = 'https://huggingface.co';
const REVISION = 'main';
/** The quants tried, in order, when the reference names none (llama.cpp's order). */
export const DEFAULT_QUANTS = ['Q4_K_M', 'Q8_0'] as const;

export interface RemoteFile {
  /** The file's path in the repository (or its name, for a URL). */
  path: string;
  url: string;
  /** Size and sha256 as the source states them; null where it states none. */
  bytes: number | null;
  sha256: string | null;
}

export interface HubPlan {
  repo: string;
  revision: string;
  /** The model's files: one, or every part of a split model, part 1 first. */
  files: RemoteFile[];
}

/** HF_ENDPOINT (a mirror), without a trailing slash; the hub itself when unset. */
export function hubEndpoint(env: NodeJS.ProcessEnv = process.env): string {
  return (env.HF_ENDPOINT || DEFAULT_HF_ENDPOINT).replace(/\/+$/, '');
}

/** The Authorization header HF_TOKEN gives, if any. */
export function authHeaders(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const token = env.HF_TOKEN || env.HUGGING_FACE_HUB_TOKEN;
  return token ? { authorization: `Bearer ${token}` } : {};
}

export function isModelFile(path: string): boolean {
  const name = path.split('/').pop()!.toLowerCase();
  return name.endsWith('.gguf') && !['mmproj', 'imatrix', 'mtp-', 'eagle3-', 'dflash-'].some((word) => name.includes(word));
}

interface TreeEntry {
  type?: string;
  path?: string;
  size?: number;
  lfs?: { oid?: string; size?: number };
}

/** Why a hub answer is not a listing, in words an operator can act on. */
export function statusReason(status: number, what: string): string {
  if (status === 401 || status === 403) {
    return `${what} needs access (HTTP ${status}): the repository is gated or private; accept its terms on the hub and set HF_TOKEN to a token that may read it`;
  }
  if (status === 404) return `${what} was not found (HTTP 404)`;
  return `${what} failed with HTTP ${status}`;
}

async function listFiles(repo: string, env: NodeJS.ProcessEnv): Promise<TreeEntry[]> {
  const url = `${hubEndpoint(env)}/api/models/${repo}/tree/${REVISION}?recursive=true`;
  let res: Response;
  try {
    res = await fetch(url, { headers: { accept: 'application/json', 'user-agent': 'arbitra', ...authHeaders(env) } });
  } catch (err) {
    throw new Error(`cannot reach ${hubEndpoint(env)} to list ${repo}: ${failureReason(err)}`);
  }
  if (!res.ok) throw new Error(statusReason(res.status, `listing the files of ${repo}`));
  const body = (await res.json()) as unknown;
  if (!Array.isArray(body)) throw new Error(`the hub's file listing of ${repo} is not a list`);
  return body as TreeEntry[];
}

function remoteFile(repo: string, entry: TreeEntry, env: NodeJS.ProcessEnv): RemoteFile {
  const oid = entry.lfs?.oid;
  return {
    path: entry.path!,
    url: `${hubEndpoint(env)}/${repo}/resolve/${REVISION}/${entry.path!.split('/').map(encodeURIComponent).join('/')}`,
    bytes: entry.lfs?.size ?? entry.size ?? null,
    sha256: typeof oid === 'string' && /^[0-9a-f]{64}$/i.test(oid) ? oid.toLowerCase() : null,
  };
}

/** The file llama.cpp would pick for this tag (or the default quants), part 1 of a split model. */
export function pickModelFile(paths: readonly string[], quant: string | null): string | null {
  const models = paths.filter((p) => isModelFile(p) && splitInfo(p.split('/').pop()!).index === 1);
  for (const tag of quant ? [quant] : DEFAULT_QUANTS) {
    const pattern = new RegExp(`${tag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[.-]`, 'i');
    const hit = models.find((p) => pattern.test(p.split('/').pop()!));
    if (hit) return hit;
  }
  return quant ? null : (models[0] ?? null);
}

/** The files of the model an `hf:` reference names, with their stated digests and sizes. */
export async function resolveHubRef(ref: Extract<ModelRef, { kind: 'hf' }>, env: NodeJS.ProcessEnv = process.env): Promise<HubPlan> {
  const entries = (await listFiles(ref.repo, env)).filter((e) => e.type === 'file' && typeof e.path === 'string');
  const byPath = new Map(entries.map((e) => [e.path!.toLowerCase(), e]));
  const available = entries.filter((e) => isModelFile(e.path!)).map((e) => e.path!);
  const listing = available.length ? `; GGUF files there: ${available.join(', ')}` : '; it holds no GGUF file';
  const chosen = ref.file ? (byPath.get(ref.file.toLowerCase())?.path ?? null) : pickModelFile(available, ref.quant);
  if (!chosen) {
    const what = ref.file ? `no file ${ref.file}` : ref.quant ? `no ${ref.quant} model file` : 'no model file';
    throw new ModelRefError(`${ref.repo} has ${what}${listing}`);
  }
  const folder = chosen.includes('/') ? chosen.slice(0, chosen.lastIndexOf('/') + 1) : '';
  const files = splitParts(chosen.slice(folder.length)).map((name) => {
    const entry = byPath.get(`${folder}${name}`.toLowerCase());
    if (!entry) throw new ModelRefError(`${ref.repo} lacks ${folder}${name}, a part of the split model ${chosen}`);
    return remoteFile(ref.repo, entry, env);
  });
  return { repo: ref.repo, revision: REVISION, files };
}

// `arbitra models pull REF` and `--model REF`: an `hf:` reference or a URL becomes a pulled model
// in the store. A model already pulled by the same reference is found without the network; two
// pulls of one model take turns on a lock, so the second finds the first's result.
import fs from 'node:fs';
import path from 'node:path';
import { findEntry } from './catalogue.js';
import { isVerified } from './checksum.js';
import { downloadFile } from './download.js';
import { isLoopback } from '../addresses.js';
import { authHeaders, hubEndpoint, resolveHubRef, type HubPlan, type RemoteFile } from './hub.js';
import { withLock } from './lock.js';
import type { ProgressSink } from './progress.js';
import { formatRef, modelNameOf, splitParts, type ModelRef } from './ref.js';
import { findPulled, isComplete, modelFolder, modelPathOf, NAME_PATTERN, writeRecord, type ModelRecord, type PulledFile } from './store.js';

export interface PullOptions {
  /** The models folder. */
  dir: string;
  env?: NodeJS.ProcessEnv;
  /** The store name; default: the file name without `.gguf` and split suffix, lower case. */
  name?: string;
  /** A sha256 the (single) file must have, whatever the source states. */
  sha256?: string;
  progress?: ProgressSink;
  retries?: number;
  retryDelayMs?: number;
}

export class PullError extends Error {
  override readonly name = 'PullError';
}

/** The pulled model a reference names, when a pull by that reference finished: no network needed. */
export function pulledByRef(dir: string, ref: ModelRef): ModelRecord | null {
  const record = findPulled(dir, formatRef(ref));
  return record && isComplete(dir, record) ? record : null;
}

function urlPlan(url: string): HubPlan {
  const u = new URL(url);
  const file = decodeURIComponent(u.pathname.split('/').pop() ?? '');
  if (!/\.gguf$/i.test(file)) throw new PullError(`${url} does not name a .gguf file`);
  const files: RemoteFile[] = splitParts(file).map((part) => {
    const partUrl = new URL(u);
    partUrl.pathname = `${u.pathname.slice(0, u.pathname.lastIndexOf('/') + 1)}${encodeURIComponent(part)}`;
    return { path: part, url: partUrl.toString(), bytes: null, sha256: null };
  });
  return { repo: '', revision: '', files };
}

/**
 * Plain http:// beyond this machine is refused unless a digest is pinned: whoever is on the way can
 * change the bytes and any digest the source states with them. A mirror on loopback is this machine's.
 */
function refuseUnauthenticated(ref: ModelRef, env: NodeJS.ProcessEnv, pinned: string | undefined): void {
  const source = new URL(ref.kind === 'hf' ? hubEndpoint(env) : ref.url);
  if (source.protocol !== 'http:' || isLoopback(source.hostname) || pinned !== undefined) return;
  const what = ref.kind === 'hf' ? `the hub at ${source.origin} (HF_ENDPOINT)` : ref.url;
  throw new PullError(
    `${what} is plain http://: its bytes, and any digest it states, can be changed on the way; pull over https:// or pin the file with --sha256`,
  );
}

async function planOf(ref: ModelRef, env: NodeJS.ProcessEnv, pinned: string | undefined): Promise<HubPlan> {
  refuseUnauthenticated(ref, env, pinned);
  const plan = ref.kind === 'hf' ? await resolveHubRef(ref, env) : urlPlan(ref.url);
  if (pinned === undefined) return plan;
  if (!/^[0-9a-f]{64}$/i.test(pinned)) throw new PullError(`--sha256 must be 64 hex digits, got ${JSON.stringify(pinned)}`);
  if (plan.files.length > 1) throw new PullError(`--sha256 pins one file, and ${formatRef(ref)} is split into ${plan.files.length}`);
  const stated = plan.files[0]!.sha256;
  if (stated && stated !== pinned.toLowerCase())
    throw new PullError(`the hub states sha256 ${stated} for ${plan.files[0]!.path}, not the pinned ${pinned.toLowerCase()}`);
  return { ...plan, files: [{ ...plan.files[0]!, sha256: pinned.toLowerCase() }] };
}

/** Why `name` cannot be this reference's store name; null when it can. */
function nameClash(dir: string, ref: ModelRef, name: string): string | null {
  if (!NAME_PATTERN.test(name)) return `${JSON.stringify(name)} is not a usable model name (letters, digits, '.', '_' and '-')`;
  if (findEntry(name)) return `${name} is a catalogue model's name`;
  const existing = findPulled(dir, name);
  if (existing && existing.source.toLowerCase() !== formatRef(ref).toLowerCase()) return `a model named ${name} is already pulled from ${existing.source}`;
  return null;
}

/**
 * The store name: the one asked for, else the file's (`qwen2.5-7b-instruct-q4_k_m`), else, when
 * that is taken (a catalogue model, another source), the repository owner's name before it.
 */
function nameFor(dir: string, ref: ModelRef, plan: HubPlan, wanted: string | undefined): string {
  const derived = modelNameOf(plan.files[0]!.path);
  const candidates =
    wanted !== undefined ? [wanted.toLowerCase()] : ref.kind === 'hf' ? [derived, `${ref.repo.split('/')[0]!.toLowerCase()}-${derived}`] : [derived];
  const clashes = candidates.map((name) => nameClash(dir, ref, name));
  const free = candidates.findIndex((_, i) => clashes[i] === null);
  if (free >= 0) return candidates[free]!;
  throw new PullError(`${clashes.at(-1)!}: \`arbitra models rm ${candidates.at(-1)!}\` first, or give another name with --name`);
}

async function fetchFiles(dir: string, name: string, plan: HubPlan, opts: PullOptions, env: NodeJS.ProcessEnv): Promise<PulledFile[]> {
  const out: PulledFile[] = [];
  for (const f of plan.files) {
    const target = path.join(modelFolder(dir, name), path.basename(f.path));
    const checked = f.sha256 === null ? null : f.sha256 === opts.sha256?.toLowerCase() ? 'pinned' : 'hub';
    if (f.sha256 && isVerified(target, f.sha256)) {
      out.push({ file: path.basename(target), url: f.url, bytes: fs.statSync(target).size, sha256: f.sha256, checked: checked! });
      continue; // a part an earlier, interrupted pull finished
    }
    // HF_TOKEN goes to the hub (HF_ENDPOINT) only, never to another URL's host.
    const headers = new URL(f.url).origin === new URL(hubEndpoint(env)).origin ? authHeaders(env) : {};
    const got = await downloadFile({
      url: f.url,
      target,
      sha256: f.sha256,
      bytes: f.bytes,
      headers,
      progress: opts.progress,
      retries: opts.retries,
      retryDelayMs: opts.retryDelayMs,
    });
    out.push({
      file: path.basename(target),
      url: f.url,
      bytes: got.bytes,
      sha256: got.sha256,
      checked: checked ?? (got.checked === 'stated' ? 'pinned' : got.checked),
    });
  }
  return out;
}

/** Pulls the model `ref` names into the store (or finds it there) and returns its record and the file to load. */
export async function pullModel(ref: ModelRef, opts: PullOptions): Promise<{ record: ModelRecord; path: string }> {
  const env = opts.env ?? process.env;
  const dir = path.resolve(opts.dir);
  const have = pulledByRef(dir, ref);
  if (have && (opts.name === undefined || opts.name.toLowerCase() === have.name)) return { record: have, path: modelPathOf(dir, have) };
  const plan = await planOf(ref, env, opts.sha256);
  const name = nameFor(dir, ref, plan, opts.name);
  fs.mkdirSync(modelFolder(dir, name), { recursive: true });
  return withLock(
    path.join(dir, `.${name}.lock`),
    async () => {
      const done = pulledByRef(dir, ref); // the pull we waited for may have fetched it
      if (done && done.name === name) return { record: done, path: modelPathOf(dir, done) };
      fs.mkdirSync(modelFolder(dir, name), { recursive: true });
      const files = await fetchFiles(dir, name, plan, opts, env);
      const record: ModelRecord = {
        name,
        source: formatRef(ref),
        repo: plan.repo || null,
        revision: plan.revision || null,
        files,
        pulledAt: new Date().toISOString(),
      };
      writeRecord(dir, record);
      return { record, path: modelPathOf(dir, record) };
    },
    { log: opts.progress?.log },
  );
}

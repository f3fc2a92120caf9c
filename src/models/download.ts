// One file over HTTP(S) into the models folder: resumable, verified, and never half-written.
//
// Bytes go to `<file>.partial`, described by `<file>.partial.json` (the URL and the digest it
// should end with). After a cut connection the partial file stays and the next attempt (this pull
// retries a few times, and a later pull does the same) asks for the rest with `Range: bytes=N-`;
// a server that ignores the range sends the whole file again, which replaces the partial one. The
// sha256 (stated by the hub, pinned by the operator, or the hub's `X-Linked-Etag` on its redirect)
// is computed while the bytes arrive and checked before the file is renamed into place.
//
// Refused, with the partial file and its description removed: a body that does not begin with the
// GGUF magic (an HTML error page is refused at its first bytes, not after downloading it), a wrong
// digest, more bytes than stated, and a disk that fills (ENOSPC: keeping a partial file would hold
// on to the very space the operator has to free). Not enough free space for the stated size is
// refused before a byte is written.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashFileInto, stampVerified } from './checksum.js';
import { failureReason } from './failure.js';
import { statusReason } from './hub.js';
import { readJson } from './json.js';
import { createProgress, formatBytes, type ProgressSink } from './progress.js';

const GGUF_MAGIC = Buffer.from('GGUF');
const MAX_REDIRECTS = 10;

export interface DownloadSpec {
  url: string;
  /** Where the finished file goes. */
  target: string;
  /** The sha256 the file must have; null: none stated (the hub's X-Linked-Etag is used if it sends one). */
  sha256: string | null;
  bytes: number | null;
  /** Sent to the first host only (HF_TOKEN), never to a CDN it redirects to. */
  headers?: Record<string, string>;
  progress?: ProgressSink;
  /** Further attempts after a cut connection, each resuming where the last stopped (default 3). */
  retries?: number;
  retryDelayMs?: number;
}

export interface Downloaded {
  file: string;
  bytes: number;
  sha256: string;
  /** What the digest was checked against: the spec's, the hub's X-Linked-Etag, or nothing. */
  checked: 'stated' | 'linked-etag' | 'none';
}

/** A failure that leaves a partial file a later attempt resumes. */
export class ResumableError extends Error {}

/** A body that is not the file asked for: nothing of it is kept. */
class RefusedError extends Error {}

interface PartialMeta {
  url: string;
  sha256: string | null;
}

interface Opened {
  res: Response;
  linked: { sha256: string | null; bytes: number | null };
}

function linkedDigest(res: Response): string | null {
  const etag = res.headers.get('x-linked-etag')?.replace(/^W\//, '').replace(/"/g, '');
  return etag && /^[0-9a-f]{64}$/i.test(etag) ? etag.toLowerCase() : null;
}

/** GET with redirects followed by hand: the first answer's X-Linked-* headers are the hub's word on the file. */
async function open(spec: DownloadSpec, from: number): Promise<Opened> {
  let url = spec.url;
  let headers: Record<string, string> = { 'user-agent': 'arbitra', ...spec.headers };
  const linked: Opened['linked'] = { sha256: null, bytes: null };
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    let res: Response;
    try {
      res = await fetch(url, { redirect: 'manual', headers: from > 0 ? { ...headers, range: `bytes=${from}-` } : headers });
    } catch (err) {
      throw new ResumableError(`cannot reach ${new URL(url).host}: ${failureReason(err)}`);
    }
    if (hop === 0) {
      linked.sha256 = linkedDigest(res);
      linked.bytes = Number(res.headers.get('x-linked-size')) || null;
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      const next = new URL(location, url);
      if (next.origin !== new URL(url).origin) headers = { 'user-agent': 'arbitra' }; // the token stays with the hub
      url = next.toString();
      continue;
    }
    return { res, linked };
  }
  throw new Error(`more than ${MAX_REDIRECTS} redirects fetching ${spec.url}`);
}

function removePartial(partial: string): void {
  fs.rmSync(partial, { force: true });
  fs.rmSync(`${partial}.json`, { force: true });
}

function freeBytes(dir: string): number | null {
  try {
    const s = fs.statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return null;
  }
}

function startsLike(head: Buffer): string {
  const text = head
    .subarray(0, 16)
    .toString('latin1')
    .replace(/[^\x20-\x7e]/g, '.');
  return JSON.stringify(text);
}

/** Bytes already in the partial file that this spec may resume from (0: start over). */
function resumable(spec: DownloadSpec, partial: string): number {
  const meta = readJson<PartialMeta>(`${partial}.json`);
  if (!meta || meta.url !== spec.url || meta.sha256 !== spec.sha256 || !fs.existsSync(partial)) return 0;
  const size = fs.statSync(partial).size;
  return size >= GGUF_MAGIC.length && (spec.bytes === null || size <= spec.bytes) ? size : 0;
}

/** One attempt: from `from` bytes on to the end, or an error saying whether a retry may resume. */
async function attempt(spec: DownloadSpec, partial: string, from: number): Promise<Downloaded> {
  const name = path.basename(spec.target);
  const { res, linked } = await open(spec, from);
  if (from > 0 && (res.status === 416 || (res.status === 206 && !res.headers.get('content-range')?.startsWith(`bytes ${from}-`)))) {
    await res.body?.cancel();
    removePartial(partial);
    throw new ResumableError(`${spec.url} did not serve bytes ${from}- as asked; starting ${name} over`);
  }
  if (res.status !== 200 && res.status !== 206) {
    await res.body?.cancel();
    const why = statusReason(res.status, `downloading ${spec.url}`);
    throw res.status >= 500 ? new ResumableError(why) : new Error(why);
  }
  if (/text\/html/i.test(res.headers.get('content-type') ?? '')) {
    await res.body?.cancel();
    removePartial(partial);
    throw new Error(`${spec.url} answered with an HTML page, not a GGUF file (a login, error or gated-model page?)`);
  }
  const expected = spec.sha256 ?? linked.sha256;
  const start = res.status === 206 ? from : 0;
  const length = Number(res.headers.get('content-length'));
  const total = spec.bytes ?? linked.bytes ?? (length > 0 ? start + length : null);
  const free = freeBytes(path.dirname(partial));
  if (total !== null && free !== null && free < total - start) {
    await res.body?.cancel();
    throw new Error(`not enough disk space for ${name} in ${path.dirname(partial)}: ${formatBytes(total - start)} more needed, ${formatBytes(free)} free`);
  }

  const hash = createHash('sha256');
  if (start > 0) await hashFileInto(hash, partial);
  fs.writeFileSync(`${partial}.json`, JSON.stringify({ url: spec.url, sha256: spec.sha256 } satisfies PartialMeta));
  const fh = await fs.promises.open(partial, start > 0 ? 'a' : 'w');
  const progress = spec.progress && createProgress(name, total, start, spec.progress);
  let done = start;
  let head = Buffer.alloc(0);
  try {
    try {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        let data = Buffer.from(chunk);
        if (done === 0 && head.length + data.length < GGUF_MAGIC.length) {
          head = Buffer.concat([head, data]); // too few bytes yet to judge the magic
          continue;
        }
        if (done === 0) {
          data = Buffer.concat([head, data]);
          if (!data.subarray(0, 4).equals(GGUF_MAGIC)) throw new RefusedError(`${spec.url} is not a GGUF file: it begins ${startsLike(data)}, not "GGUF"`);
        }
        if (total !== null && done + data.length > total) throw new RefusedError(`${spec.url} sent more than the ${total} bytes stated for ${name}`);
        await fh.write(data);
        hash.update(data);
        done += data.length;
        progress?.update(done);
      }
      if (done === 0 && head.length > 0) throw new RefusedError(`${spec.url} is not a GGUF file: it is only ${head.length} bytes`);
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') {
      removePartial(partial);
      throw new Error(
        `disk full writing ${name} in ${path.dirname(partial)} after ${formatBytes(done)}${total ? ` of ${formatBytes(total)}` : ''}; the partial file was removed: free space and pull again`,
      );
    }
    if (err instanceof RefusedError) {
      removePartial(partial);
      throw err;
    }
    throw new ResumableError(
      `the download of ${name} broke off after ${formatBytes(done)}${total ? ` of ${formatBytes(total)}` : ''} (${failureReason(err)}); the partial file is kept and the next pull resumes it`,
    );
  } finally {
    progress?.finish();
  }
  if (total !== null && done < total)
    throw new ResumableError(
      `the connection closed after ${formatBytes(done)} of ${formatBytes(total)} of ${name}; the partial file is kept and the next pull resumes it`,
    );

  const digest = hash.digest('hex');
  if (expected && digest !== expected) {
    removePartial(partial);
    throw new Error(`checksum mismatch for ${name}: got ${digest}, expected ${expected}; nothing was kept`);
  }
  fs.renameSync(partial, spec.target);
  fs.rmSync(`${partial}.json`, { force: true });
  stampVerified(spec.target, digest);
  return { file: spec.target, bytes: done, sha256: digest, checked: spec.sha256 ? 'stated' : expected ? 'linked-etag' : 'none' };
}

/** Downloads `spec.url` to `spec.target`, resuming a partial file a previous attempt left. */
export async function downloadFile(spec: DownloadSpec): Promise<Downloaded> {
  const partial = `${spec.target}.partial`;
  fs.mkdirSync(path.dirname(spec.target), { recursive: true });
  const retries = spec.retries ?? 3;
  for (let i = 0; ; i++) {
    const from = resumable(spec, partial);
    if (from > 0 && i === 0) spec.progress?.log(`${path.basename(spec.target)}: resuming after ${formatBytes(from)} already on disk`);
    try {
      return await attempt(spec, partial, from);
    } catch (err) {
      if (!(err instanceof ResumableError) || i >= retries) throw err;
      spec.progress?.log(`${(err as Error).message}; retrying`);
      await sleep((spec.retryDelayMs ?? 1000) * 2 ** i);
    }
  }
}

// A local HTTP server that plays the Hugging Face hub for the pull tests: the tree listing with each
// file's LFS sha256 and size, `/{repo}/resolve/main/{file}` answering 302 to a CDN path with the
// X-Linked-Etag/X-Linked-Size headers, the CDN serving Range requests, gated repositories that
// need a bearer token, connections cut halfway, and pages that are not files. It counts what it
// sends, so tests can prove what was (not) downloaded.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HubFile {
  data: Buffer;
  /** The sha256 the listing states; default the true one. */
  stated?: string;
  /** Cut this many of the next CDN responses after half of what they would send. */
  cuts?: number;
  /** Served as this content type with this body instead of the file. */
  page?: { contentType: string; body: Buffer };
  /** Send no Content-Length (chunked), as a server that states no size does. */
  noLength?: boolean;
}

export interface HubRepo {
  files: Record<string, HubFile>;
  /** A gated repository: its files need `Authorization: Bearer <token>`. */
  token?: string;
}

export interface Served {
  method: string;
  url: string;
  range: string | null;
  auth: string | null;
  status: number;
  /** Body bytes written before the response ended or was cut. */
  sent: number;
  /** The whole body was written. */
  complete: boolean;
}

export const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Bytes that pass the GGUF magic check: "GGUF", version 3, then random bytes. */
export function fakeGguf(size: number): Buffer {
  const b = randomBytes(size);
  b.write('GGUF', 0, 'latin1');
  b.writeUInt32LE(3, 4);
  return b;
}

export interface FakeHub {
  url: string;
  repos: Map<string, HubRepo>;
  served: Served[];
  close(): Promise<void>;
}

function sendBody(res: http.ServerResponse, body: Buffer, record: Served, cutAfter: number | null): void {
  const limit = cutAfter ?? body.length;
  let at = 0;
  const pump = (): void => {
    while (at < limit) {
      const chunk = body.subarray(at, Math.min(limit, at + 64 * 1024));
      at += chunk.length;
      record.sent = at;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    if (cutAfter !== null) {
      res.socket?.destroy(); // the connection drops mid-file
      return;
    }
    record.complete = true;
    res.end();
  };
  res.on('close', () => res.removeAllListeners('drain'));
  pump();
}

function cdn(repo: HubRepo, file: HubFile, req: http.IncomingMessage, res: http.ServerResponse, record: Served): void {
  if (file.page) {
    res.writeHead((record.status = 200), { 'content-type': file.page.contentType, 'content-length': file.page.body.length });
    return sendBody(res, file.page.body, record, null);
  }
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  const from = m ? Number(m[1]) : 0;
  if (from >= file.data.length && m) {
    res.writeHead((record.status = 416), { 'content-range': `bytes */${file.data.length}` });
    return void res.end();
  }
  const body = file.data.subarray(from);
  const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/octet-stream', 'accept-ranges': 'bytes' };
  if (!file.noLength) headers['content-length'] = body.length;
  if (m) headers['content-range'] = `bytes ${from}-${file.data.length - 1}/${file.data.length}`;
  res.writeHead((record.status = m ? 206 : 200), headers);
  const cut = (file.cuts ?? 0) > 0;
  if (cut) file.cuts!--;
  sendBody(res, body, record, cut ? Math.floor(body.length / 2) : null);
}

function findFile(hub: FakeHub, repoName: string, path: string): { repo: HubRepo; file: HubFile } | null {
  const repo = hub.repos.get(repoName);
  const file = repo?.files[path];
  return repo && file ? { repo, file } : null;
}

function authorised(repo: HubRepo, req: http.IncomingMessage): boolean {
  return !repo.token || req.headers.authorization === `Bearer ${repo.token}`;
}

/** Starts the fake hub on 127.0.0.1 at a free port. */
export async function startFakeHub(repos: Record<string, HubRepo> = {}): Promise<FakeHub> {
  const hub: FakeHub = { url: '', repos: new Map(Object.entries(repos)), served: [], close: async () => {} };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://hub');
    const record: Served = {
      method: req.method!,
      url: url.pathname,
      range: req.headers.range ?? null,
      auth: req.headers.authorization ?? null,
      status: 0,
      sent: 0,
      complete: false,
    };
    hub.served.push(record);
    const reply = (status: number, body: string, type = 'application/json'): void => {
      record.status = status;
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    const tree = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/main$/.exec(url.pathname);
    if (tree) {
      const repo = hub.repos.get(tree[1]!);
      if (!repo) return reply(404, JSON.stringify({ error: 'Repository not found' }));
      const listing = Object.entries(repo.files).map(([path, f]) => ({
        type: 'file',
        oid: sha256(f.data).slice(0, 40),
        size: f.data.length,
        path,
        lfs: { oid: f.stated ?? sha256(f.data), size: f.data.length, pointerSize: 134 },
      }));
      return reply(200, JSON.stringify(listing));
    }
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/.exec(url.pathname);
    if (resolve) {
      const found = findFile(hub, resolve[1]!, decodeURIComponent(resolve[2]!));
      if (!found) return reply(404, 'Entry not found', 'text/plain');
      if (!authorised(found.repo, req))
        return reply(401, JSON.stringify({ error: 'Access to model is restricted. You must have access to it and be authenticated to access it.' }));
      record.status = 302;
      res.writeHead(302, {
        location: `/cdn/${resolve[1]!}/${resolve[2]!}`,
        'x-linked-etag': `"${found.file.stated ?? sha256(found.file.data)}"`,
        'x-linked-size': String(found.file.data.length),
        'x-repo-commit': '0123456789abcdef0123456789abcdef01234567',
      });
      return void res.end();
    }
    const cdnPath = /^\/cdn\/([^/]+\/[^/]+)\/(.+)$/.exec(url.pathname);
    const plain = /^\/plain\/([^/]+\/[^/]+)\/(.+)$/.exec(url.pathname); // the same files, no hub headers
    const hit = cdnPath ?? plain;
    if (hit) {
      const found = findFile(hub, hit[1]!, decodeURIComponent(hit[2]!));
      if (!found) return reply(404, '<!DOCTYPE html><title>404</title>', 'text/html');
      return cdn(found.repo, found.file, req, res, record);
    }
    reply(404, 'no such route', 'text/plain');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  hub.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return hub;
}

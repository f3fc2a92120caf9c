// One HTTP call for the load benches, on node:http so a bench controls what undici's fetch hides:
// a fresh connection when asked (SO_REUSEPORT then spreads calls over the HTTP workers), a hard
// timeout, and a client that disconnects mid-request. It never throws: a failed call is status 0.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface Reply {
  /** The HTTP status, or 0 when no response came (see `error`). */
  status: number;
  ms: number;
  text: string;
  /** 'timeout', 'aborted' or the socket error's code when status is 0. */
  error?: string;
}

export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  timeoutMs: number;
  /** A new connection for this call alone. */
  fresh?: boolean;
  /** Aborting it closes the connection: the server sees its client go away. */
  signal?: AbortSignal;
}

const pooled = new http.Agent({ keepAlive: true, maxSockets: Infinity });

export function call(url: string, opts: CallOptions): Promise<Reply> {
  const started = performance.now();
  const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
  const headers: Record<string, string | number> = { ...(opts.headers ?? {}) };
  if (payload) Object.assign(headers, { 'content-type': 'application/json', 'content-length': payload.length });
  return new Promise<Reply>((resolve) => {
    let settled = false;
    const finish = (status: number, text: string, error?: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ status, ms: performance.now() - started, text, ...(error ? { error } : {}) });
    };
    const req = http.request(
      url,
      { method: opts.method ?? (payload ? 'POST' : 'GET'), headers, agent: opts.fresh ? false : pooled, signal: opts.signal },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => finish(res.statusCode ?? 0, Buffer.concat(chunks).toString()));
        res.on('error', (e: NodeJS.ErrnoException) => finish(0, '', e.code ?? e.message));
      },
    );
    const timer = setTimeout(() => {
      finish(0, '', 'timeout');
      req.destroy();
    }, opts.timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => finish(0, '', opts.signal?.aborted ? 'aborted' : (e.code ?? e.message)));
    req.end(payload);
  });
}

/** The body as JSON, or null when it is not. */
export function json(reply: Reply): any {
  try {
    return JSON.parse(reply.text);
  } catch {
    return null;
  }
}

/** A status for tables: the HTTP code, or the reason no response came. */
export function outcome(reply: Reply): string {
  return reply.status === 0 ? (reply.error ?? 'error') : String(reply.status);
}

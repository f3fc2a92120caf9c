// One HTTP/1.1 request over a raw socket, sent the way most clients send one: the whole body is
// written before a byte of the answer is read, so a server that closes early shows up as the reset
// the client meets, not as an answer the kernel happened to deliver first. The answer is parsed as
// it streams and only counted past what is kept, so an answer of hundreds of megabytes costs no
// memory. It never throws: what went wrong is in `error`.
import net from 'node:net';
import { performance } from 'node:perf_hooks';

export interface RawRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  /** The body's bytes, or a number of filler bytes (Infinity: a chunked body without end). */
  body: Buffer | number;
  /** Sent with Transfer-Encoding: chunked instead of a Content-Length. */
  chunked?: boolean;
  /** Gives up (error 'timeout') after this long; default 10 minutes. */
  timeoutMs?: number;
}

export interface RawReply {
  /** The status, or null when no answer's head arrived. */
  status: number | null;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The answer's body as text, its first MiB (a chunked one decoded). */
  body: string;
  /** Every body byte that arrived. */
  bodyBytes: number;
  /** Whether the whole answer arrived. */
  complete: boolean;
  /** Body bytes the client got onto the wire. */
  sent: number;
  /** The socket error the client met ('timeout' when it gave up), or null. */
  error: string | null;
  ms: number;
}

const KEEP_BYTES = 1024 * 1024;
const FILLER = Buffer.alloc(64 * 1024, 0x20);

/** An HTTP/1.1 answer parsed as its bytes arrive: the head, then a Content-Length or chunked body. */
class AnswerParser {
  status: number | null = null;
  headers: Record<string, string> = {};
  bodyBytes = 0;
  complete = false;
  private kept: Buffer[] = [];
  private keptBytes = 0;
  private pending: Buffer = Buffer.alloc(0);
  private state: 'head' | 'length' | 'size' | 'data' | 'crlf' | 'done' = 'head';
  private left = 0;

  body(): string {
    return Buffer.concat(this.kept).toString('utf8');
  }

  push(data: Buffer): void {
    this.pending = this.pending.length === 0 ? data : Buffer.concat([this.pending, data]);
    for (let progressed = true; progressed && this.state !== 'done'; ) progressed = this.step();
  }

  private step(): boolean {
    switch (this.state) {
      case 'head': {
        const end = this.pending.indexOf('\r\n\r\n');
        if (end < 0) return false;
        const [statusLine, ...lines] = this.pending.subarray(0, end).toString('latin1').split('\r\n');
        this.status = Number(statusLine!.split(' ')[1]);
        for (const line of lines) this.headers[line.slice(0, line.indexOf(':')).trim().toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
        this.pending = this.pending.subarray(end + 4);
        if (this.headers['transfer-encoding']?.toLowerCase() === 'chunked') this.state = 'size';
        else {
          this.left = Number(this.headers['content-length'] ?? 0);
          this.state = 'length';
        }
        return true;
      }
      case 'length':
      case 'data': {
        const take = Math.min(this.left, this.pending.length);
        this.keep(this.pending.subarray(0, take));
        this.pending = this.pending.subarray(take);
        this.left -= take;
        if (this.left > 0) return false;
        this.state = this.state === 'length' ? 'done' : 'crlf';
        this.complete = this.state === 'done';
        return true;
      }
      case 'size': {
        const end = this.pending.indexOf('\r\n');
        if (end < 0) return false;
        this.left = parseInt(this.pending.subarray(0, end).toString('latin1'), 16);
        this.pending = this.pending.subarray(end + 2);
        this.state = this.left === 0 ? 'done' : 'data';
        this.complete = this.state === 'done';
        return true;
      }
      case 'crlf':
        if (this.pending.length < 2) return false;
        this.pending = this.pending.subarray(2);
        this.state = 'size';
        return true;
      default:
        return false;
    }
  }

  private keep(data: Buffer): void {
    this.bodyBytes += data.length;
    if (this.keptBytes >= KEEP_BYTES) return;
    const piece = data.subarray(0, KEEP_BYTES - this.keptBytes);
    this.kept.push(Buffer.from(piece));
    this.keptBytes += piece.length;
  }
}

/**
 * Sends `request` to 127.0.0.1:`port`, reading nothing until the body is sent (a body without end
 * is read beside, as it goes, until the server stops it), then reads one answer.
 */
export function sendThenRead(port: number, request: RawRequest): Promise<RawReply> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const size = Buffer.isBuffer(request.body) ? request.body.length : request.body;
    if (Number.isFinite(size)) socket.pause();
    const parser = new AnswerParser();
    let sent = 0;
    let error: string | null = null;
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      const { status, headers, bodyBytes, complete } = parser;
      resolve({ status, headers, body: parser.body(), bodyBytes, complete, sent, error, ms: performance.now() - started });
    };
    const timer = setTimeout(() => {
      error = 'timeout';
      finish();
    }, request.timeoutMs ?? 600_000);
    socket.on('data', (d: Buffer) => {
      parser.push(d);
      if (parser.complete) finish();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => (error ??= err.code ?? err.message));
    socket.on('close', finish);

    const headers: Record<string, string> = { host: '127.0.0.1', ...(request.headers ?? {}) };
    if (request.chunked) headers['transfer-encoding'] = 'chunked';
    else headers['content-length'] = String(size);
    const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
    socket.write(`${request.method ?? 'POST'} ${request.path} HTTP/1.1\r\n${head.join('')}\r\n`);
    const pump = (): void => {
      while (!socket.destroyed && sent < size) {
        const piece = Buffer.isBuffer(request.body)
          ? request.body.subarray(sent, sent + FILLER.length)
          : FILLER.subarray(0, Math.min(FILLER.length, size - sent));
        sent += piece.length;
        const framed = request.chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
        if (!socket.write(framed)) {
          socket.once('drain', pump);
          return;
        }
      }
      if (request.chunked && !socket.destroyed) socket.write('0\r\n\r\n');
      socket.resume();
    };
    pump();
  });
}

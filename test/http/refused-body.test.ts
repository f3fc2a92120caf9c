// A body refused before it was read still gets its answer while the client is sending: each
// transport answers, reads and drops the rest of the body within a bound, and only then lets the
// connection go. The client here sends everything before it reads a byte, as most HTTP clients do,
// so a server that closes early shows up as a reset instead of an answer.
import net from 'node:net';
import t, { type Test } from 'tap';
import type { HttpImplementation, Route } from '../../src/api/route.js';
import { LINGER_BODY_FACTOR } from '../../src/http/linger.js';
import { createHttpApp, DEFAULT_MAX_BODY_BYTES } from '../../src/http/pipeline.js';
import { startHttpServer } from '../../src/http/server.js';

const routes: Route[] = [{ method: 'POST', path: '/size', handler: (req) => ({ status: 200, body: { bytes: req.body.length } }) }];
const CHUNK = Buffer.alloc(64 * 1024, 0x20);

interface Seen {
  status: number | null;
  headers: Record<string, string>;
  body: string;
  /** Body bytes the client got onto the wire. */
  sent: number;
  /** The socket error the client met, if any. */
  error: string | null;
}

/**
 * Sends a POST of `size` body bytes (chunked, or with a Content-Length), reading nothing until all
 * is sent, then reads one answer. A size of Infinity is a chunked body without end, read beside as
 * it goes, until the server stops it.
 */
function sendThenRead(port: number, size: number, how: { chunked: boolean; type?: string }): Promise<Seen> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    if (Number.isFinite(size)) socket.pause();
    const received: Buffer[] = [];
    let sent = 0;
    let error: string | null = null;
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      socket.destroy();
      resolve({ ...parse(Buffer.concat(received).toString('latin1')), sent, error });
    };
    socket.on('data', (d: Buffer) => {
      received.push(d);
      if (parse(Buffer.concat(received).toString('latin1')).complete) finish();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.on('close', finish);
    const length = how.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`;
    socket.write(`POST /size HTTP/1.1\r\nHost: x\r\nContent-Type: ${how.type ?? 'application/json'}\r\n${length}\r\n\r\n`);
    const pump = (): void => {
      while (!socket.destroyed && sent < size) {
        const piece = CHUNK.subarray(0, Math.min(CHUNK.length, size - sent));
        sent += piece.length;
        const framed = how.chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
        if (!socket.write(framed)) {
          socket.once('drain', pump);
          return;
        }
      }
      if (how.chunked) socket.write('0\r\n\r\n');
      socket.resume();
    };
    pump();
  });
}

/** An HTTP/1.1 answer as far as it came: status, headers and body (a chunked one decoded). */
function parse(text: string): Omit<Seen, 'sent' | 'error'> & { complete: boolean } {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { status: null, headers: {}, body: '', complete: false };
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  let rest = text.slice(end + 4);
  let body = '';
  let complete = false;
  if (headers['transfer-encoding'] === 'chunked') {
    for (;;) {
      const line = rest.indexOf('\r\n');
      if (line < 0) break;
      const length = parseInt(rest.slice(0, line), 16);
      if (length === 0) {
        complete = true;
        break;
      }
      if (rest.length < line + 2 + length + 2) break;
      body += rest.slice(line + 2, line + 2 + length);
      rest = rest.slice(line + 2 + length + 2);
    }
  } else {
    body = rest;
    complete = rest.length >= Number(headers['content-length'] ?? Infinity);
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body, complete };
}

for (const impl of ['uws', 'node'] as HttpImplementation[]) {
  t.test(`transport ${impl}`, async (t) => {
    const app = createHttpApp({ routes });
    const server = await startHttpServer({ host: '127.0.0.1', port: 0, handler: app, prefer: impl });
    t.teardown(() => server.close(1000));
    const small = createHttpApp({ routes, maxBodyBytes: 1024 });
    const smallServer = await startHttpServer({ host: '127.0.0.1', port: 0, handler: small, prefer: impl });
    t.teardown(() => smallServer.close(1000));

    const readable = (t: Test, seen: Seen, status: number, what: string): void => {
      t.equal(seen.status, status, `${what}: the client reads its answer`);
      t.equal(seen.headers.connection, 'close', `${what}: and is told the connection ends`);
      t.equal(seen.error, null, `${what}: no reset or broken pipe`);
    };

    for (const size of [2_000_000, 5_000_000]) {
      t.test(`a ${size / 1e6} MB body with a Content-Length over the 1 MiB limit`, async (t) => {
        const seen = await sendThenRead(server.port, size, { chunked: false });
        readable(t, seen, 413, `${size} bytes`);
        t.equal(seen.sent, size, 'every byte was taken');
        t.match(JSON.parse(seen.body), { detail: { error_type: 'payload_too_large', max_body_bytes: DEFAULT_MAX_BODY_BYTES } });
      });
    }

    t.test('a 5 MB chunked body, refused once it passes the limit', async (t) => {
      const seen = await sendThenRead(server.port, 5_000_000, { chunked: true });
      readable(t, seen, 413, 'chunked');
      t.match(JSON.parse(seen.body), { detail: { error_type: 'payload_too_large' } });
    });

    t.test('a body of a type no route takes gets its 415 the same way', async (t) => {
      const seen = await sendThenRead(server.port, 1_000_000, { chunked: false, type: 'text/plain' });
      readable(t, seen, 415, 'text/plain');
      t.match(JSON.parse(seen.body), { detail: { error_type: 'unsupported_media_type' } });
    });

    t.test('a body that never ends is cut off after a bounded read', async (t) => {
      // Whether the answer is read before the cut is the client's race; that the cut comes is the server's.
      const seen = await sendThenRead(smallServer.port, Infinity, { chunked: true });
      // The bound is LINGER_BODY_FACTOR times the 1 KiB limit; the socket buffers on both sides hold megabytes more.
      t.ok(seen.sent < 64 * 1024 * 1024, `the server stopped reading after ${seen.sent} bytes (bound ${LINGER_BODY_FACTOR} KiB and the buffers)`);
    });

    t.test('the server answers the next request', async (t) => {
      const res = await fetch(`http://127.0.0.1:${server.port}/size`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[1]' });
      t.same(await res.json(), { bytes: 3 });
    });
  });
}

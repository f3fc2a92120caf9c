// A body refused before it was read still gets its answer while the client is sending: each
// transport answers, reads and drops the rest of the body within a bound, and only then lets the
// connection go. The client here sends everything before it reads a byte, as most HTTP clients do,
// so a server that closes early shows up as a reset instead of an answer.
import t, { type Test } from 'tap';
import { sendThenRead, type RawReply } from '../../bench/lib/raw-http.js';
import type { HttpImplementation, Route } from '../../src/api/route.js';
import { LINGER_BODY_FACTOR } from '../../src/http/linger.js';
import { createHttpApp, DEFAULT_MAX_BODY_BYTES } from '../../src/http/pipeline.js';
import { startHttpServer } from '../../src/http/server.js';

const JSON_TYPE = { 'content-type': 'application/json' };
const routes: Route[] = [{ method: 'POST', path: '/size', handler: (req) => ({ status: 200, body: { bytes: req.body.length } }) }];

for (const impl of ['uws', 'node'] as HttpImplementation[]) {
  t.test(`transport ${impl}`, async (t) => {
    const app = createHttpApp({ routes });
    const server = await startHttpServer({ host: '127.0.0.1', port: 0, handler: app, prefer: impl });
    t.teardown(() => server.close(1000));
    const small = createHttpApp({ routes, maxBodyBytes: 1024 });
    const smallServer = await startHttpServer({ host: '127.0.0.1', port: 0, handler: small, prefer: impl });
    t.teardown(() => smallServer.close(1000));

    const readable = (t: Test, seen: RawReply, status: number, what: string): void => {
      t.equal(seen.status, status, `${what}: the client reads its answer`);
      t.equal(seen.headers.connection, 'close', `${what}: and is told the connection ends`);
      t.equal(seen.error, null, `${what}: no reset or broken pipe`);
    };

    for (const size of [2_000_000, 5_000_000]) {
      t.test(`a ${size / 1e6} MB body with a Content-Length over the 1 MiB limit`, async (t) => {
        const seen = await sendThenRead(server.port, { path: '/size', headers: JSON_TYPE, body: size });
        readable(t, seen, 413, `${size} bytes`);
        t.equal(seen.sent, size, 'every byte was taken');
        t.match(JSON.parse(seen.body), { detail: { error_type: 'payload_too_large', max_body_bytes: DEFAULT_MAX_BODY_BYTES } });
      });
    }

    t.test('a 5 MB chunked body, refused once it passes the limit', async (t) => {
      const seen = await sendThenRead(server.port, { path: '/size', headers: JSON_TYPE, body: 5_000_000, chunked: true });
      readable(t, seen, 413, 'chunked');
      t.match(JSON.parse(seen.body), { detail: { error_type: 'payload_too_large' } });
    });

    t.test('a body of a type no route takes gets its 415 the same way', async (t) => {
      const seen = await sendThenRead(server.port, { path: '/size', headers: { 'content-type': 'text/plain' }, body: 1_000_000 });
      readable(t, seen, 415, 'text/plain');
      t.match(JSON.parse(seen.body), { detail: { error_type: 'unsupported_media_type' } });
    });

    t.test('a body that never ends is cut off after a bounded read', async (t) => {
      // Whether the answer is read before the cut is the client's race; that the cut comes is the server's.
      const seen = await sendThenRead(smallServer.port, { path: '/size', headers: JSON_TYPE, body: Infinity, chunked: true });
      // The bound is LINGER_BODY_FACTOR times the 1 KiB limit; the socket buffers on both sides hold megabytes more.
      t.ok(seen.sent < 64 * 1024 * 1024, `the server stopped reading after ${seen.sent} bytes (bound ${LINGER_BODY_FACTOR} KiB and the buffers)`);
    });

    t.test('the server answers the next request', async (t) => {
      const res = await fetch(`http://127.0.0.1:${server.port}/size`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[1]' });
      t.same(await res.json(), { bytes: 3 });
    });
  });
}

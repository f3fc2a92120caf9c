// The same matrix against both transports: a real server on 127.0.0.1, real sockets.
import t from 'tap';
import http from 'node:http';
import { Type } from '@sinclair/typebox';
import { parseTrustedProxies } from '../../src/api/client-address.js';
import { ApiError } from '../../src/api/errors.js';
import { compileBodyParser } from '../../src/api/validation.js';
import { createHttpApp } from '../../src/http/pipeline.js';
import { startHttpServer } from '../../src/http/server.js';
import type { HttpImplementation, Route } from '../../src/api/route.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const parseThing = compileBodyParser(Type.Object({ name: Type.String(), count: Type.Optional(Type.Integer({ minimum: 0, default: 1 })) }));

const routes: Route[] = [
  { method: 'GET', path: '/items/{id}', handler: (req) => ({ status: 200, body: { id: req.params.id, q: req.query.get('q'), ip: req.ip } }) },
  { method: 'DELETE', path: '/items/{id}', handler: (req) => ({ status: 200, body: { deleted: req.params.id } }) },
  { method: 'GET', path: '/items/special', handler: () => ({ status: 200, body: { special: true } }) },
  { method: 'POST', path: '/things', handler: (req) => ({ status: 200, body: parseThing(req) }) },
  { method: 'POST', path: '/size', handler: (req) => ({ status: 200, body: { bytes: req.body.length } }) },
  {
    method: 'GET',
    path: '/limited',
    handler: () => {
      throw new ApiError('rate_limited', 'Slow down.', { limit: 5 }, 1.2);
    },
  },
  {
    method: 'GET',
    path: '/down',
    handler: async () => {
      throw new ApiError('service_unavailable', 'Engine restarting.');
    },
  },
  {
    method: 'GET',
    path: '/boom',
    handler: () => {
      throw new Error('kaboom with internals');
    },
  },
  { method: 'GET', path: '/whoami', handler: (req) => ({ status: 200, body: { ip: req.ip, secure: req.secure } }) },
  { method: 'GET', path: '/text', handler: () => ({ status: 200, headers: { 'content-type': 'text/plain; version=0.0.4' }, body: 'plain\n' }) },
];

function raw(port: number, opts: http.RequestOptions, chunks: Buffer[]): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, ...opts }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

for (const impl of ['uws', 'node'] as HttpImplementation[]) {
  t.test(`transport ${impl}`, async (t) => {
    const logged: string[] = [];
    const app = createHttpApp({ routes, maxBodyBytes: 1024, log: (l) => logged.push(l) });
    const server = await startHttpServer({ host: '127.0.0.1', port: 0, handler: app, prefer: impl });
    t.teardown(() => server.close());
    t.equal(server.implementation, impl, 'the requested transport runs');
    t.ok(server.port > 0);
    const base = `http://127.0.0.1:${server.port}`;

    t.test('params, query, ip and the standard headers', async (t) => {
      const res = await fetch(`${base}/items/a%20b?q=1`);
      t.equal(res.status, 200);
      t.same(await res.json(), { id: 'a b', q: '1', ip: '127.0.0.1' });
      t.equal(res.headers.get('x-arbitra-api-version'), '2026-10-12');
      t.match(res.headers.get('content-type'), /^application\/json/);
      t.match(res.headers.get('x-request-id'), UUID);
      const again = await fetch(`${base}/items/x`);
      t.not(again.headers.get('x-request-id'), res.headers.get('x-request-id'), 'a fresh id per request');
      t.same(await (await fetch(`${base}/items/special`)).json(), { special: true }, 'a static segment wins over a parameter');
    });

    t.test('X-Forwarded-For and X-Forwarded-Proto count only from a trusted proxy', async (t) => {
      const claims = { 'x-forwarded-for': '198.51.100.1, 203.0.113.9', 'x-forwarded-proto': 'https' };
      t.same(await (await fetch(`${base}/whoami`, { headers: claims })).json(), { ip: '127.0.0.1', secure: false }, 'no proxy trusted: the peer, plain');
      const behind = await startHttpServer({
        host: '127.0.0.1',
        port: 0,
        handler: createHttpApp({ routes, trustedProxies: parseTrustedProxies('127.0.0.1'), log: () => {} }),
        prefer: impl,
      });
      t.teardown(() => behind.close());
      const via = (headers: Record<string, string>) => fetch(`http://127.0.0.1:${behind.port}/whoami`, { headers }).then((r) => r.json());
      t.same(await via(claims), { ip: '203.0.113.9', secure: true }, 'from the trusted peer: the hop it appended, over TLS');
      t.same(await via({}), { ip: '127.0.0.1', secure: false }, 'no header: the proxy itself');
      t.same(await via({ 'x-forwarded-for': 'not-an-address' }), { ip: '127.0.0.1', secure: false }, 'a bad header is ignored');
    });

    t.test('404 and 405 as JSON errors', async (t) => {
      const nf = await fetch(`${base}/nowhere`);
      t.equal(nf.status, 404);
      t.equal((await nf.json()).detail.error_type, 'not_found');
      t.match(nf.headers.get('x-request-id'), UUID);
      const na = await fetch(`${base}/items/1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' });
      t.equal(na.status, 405);
      t.equal(na.headers.get('allow'), 'DELETE, GET');
      const body = await na.json();
      t.equal(body.detail.error_type, 'method_not_allowed');
      t.type(body.detail.message, 'string');
      t.equal(na.headers.get('x-arbitra-api-version'), '2026-10-12');
    });

    t.test('JSON bodies: parsed, defaulted, validated', async (t) => {
      const ok = await fetch(`${base}/things`, {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8' },
        body: '{"name":"x","junk":1}',
      });
      t.equal(ok.status, 200);
      t.same(await ok.json(), { name: 'x', count: 1 });
      const bad = await fetch(`${base}/things`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"count":-1}' });
      t.equal(bad.status, 422);
      t.same(
        (await bad.json()).detail.map((d: any) => [d.type, d.loc]),
        [
          ['missing', ['body', 'name']],
          ['greater_than_equal', ['body', 'count']],
        ],
      );
      const broken = await fetch(`${base}/things`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name": tru}' });
      t.equal(broken.status, 422);
      t.same(await broken.json(), {
        detail: [{ type: 'json_invalid', loc: ['body', 9], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }],
      });
      const empty = await fetch(`${base}/things`, { method: 'POST' });
      t.equal(empty.status, 422, 'no content-type and no body is not a 415');
      t.equal((await empty.json()).detail[0].type, 'missing');
      const del = await fetch(`${base}/items/7`, { method: 'DELETE' });
      t.equal(del.status, 200, 'a bodiless DELETE needs no content-type');
    });

    t.test('415 for a body that is not JSON', async (t) => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx']) {
        const res = await fetch(`${base}/things`, { method: 'POST', headers: { 'content-type': type }, body: '{"name":"x"}' });
        t.equal(res.status, 415, type);
        t.equal((await res.json()).detail.error_type, 'unsupported_media_type');
      }
      const none = await raw(server.port, { method: 'POST', path: '/things', headers: { 'content-length': '12' } }, [Buffer.from('{"name":"x"}')]);
      t.equal(none.status, 415, 'a body without content-type');
    });

    t.test('413 before buffering past the limit', async (t) => {
      const exact = await fetch(`${base}/size`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `"${'a'.repeat(1022)}"` });
      t.same(await exact.json(), { bytes: 1024 }, 'exactly the limit is accepted');
      const declared = await raw(server.port, { method: 'POST', path: '/size', headers: { 'content-type': 'application/json', 'content-length': '1025' } }, [
        Buffer.alloc(1025, 32),
      ]);
      t.equal(declared.status, 413);
      const body = JSON.parse(declared.body);
      t.equal(body.detail.error_type, 'payload_too_large');
      t.equal(body.detail.max_body_bytes, 1024);
      t.equal(declared.headers['x-arbitra-api-version'], '2026-10-12');
      const chunked = await raw(
        server.port,
        { method: 'POST', path: '/size', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
        [Buffer.alloc(600, 32), Buffer.alloc(600, 32)],
      );
      t.equal(chunked.status, 413, 'a chunked body that outgrows the limit');
      const small = await raw(server.port, { method: 'POST', path: '/size', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, [
        Buffer.from('[1,'),
        Buffer.from('2]'),
      ]);
      t.same(JSON.parse(small.body), { bytes: 5 }, 'a chunked body within the limit is assembled');
    });

    t.test('429 and 503 carry Retry-After and retry-after-ms', async (t) => {
      const limited = await fetch(`${base}/limited`);
      t.equal(limited.status, 429);
      t.equal(limited.headers.get('retry-after'), '2', 'whole seconds, rounded up');
      t.equal(limited.headers.get('retry-after-ms'), '1200');
      t.same(await limited.json(), { detail: { error_type: 'rate_limited', message: 'Slow down.', limit: 5 } });
      const down = await fetch(`${base}/down`);
      t.equal(down.status, 503);
      t.equal(down.headers.get('retry-after'), '1');
      t.equal((await down.json()).detail.error_type, 'service_unavailable');
    });

    t.test('an unexpected exception is a generic 500, logged without the body', async (t) => {
      logged.length = 0;
      const res = await fetch(`${base}/boom`, { headers: { authorization: 'Bearer arb_secret_value' } });
      t.equal(res.status, 500);
      const body = await res.json();
      t.equal(body.detail.error_type, 'internal_error');
      t.notMatch(body.detail.message, /kaboom/, 'internals stay in the log');
      t.equal(logged.length, 1);
      t.match(logged[0], /kaboom/);
      t.match(logged[0], res.headers.get('x-request-id')!);
      t.notMatch(logged[0], /arb_secret_value/);
    });

    t.test('a handler may answer non-JSON with its own content-type', async (t) => {
      const res = await fetch(`${base}/text`);
      t.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4');
      t.equal(await res.text(), 'plain\n');
    });

    t.test('keep-alive: many requests on few connections', async (t) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
      const results = await Promise.all(
        Array.from(
          { length: 40 },
          (_, i) =>
            new Promise<number>((resolve, reject) => {
              http
                .get({ host: '127.0.0.1', port: server.port, path: `/items/${i}`, agent }, (res) => {
                  res.resume();
                  res.on('end', () => resolve(res.statusCode ?? 0));
                })
                .on('error', reject);
            }),
        ),
      );
      agent.destroy();
      t.ok(results.every((s) => s === 200));
    });
  });
}

t.test('a port in use is an error, not a silent second listener', async (t) => {
  const app = createHttpApp({ routes });
  const first = await startHttpServer({ host: '127.0.0.1', port: 0, handler: app, prefer: 'node' });
  t.teardown(() => first.close());
  await t.rejects(startHttpServer({ host: '127.0.0.1', port: first.port, handler: app, prefer: 'node' }), { code: 'EADDRINUSE' });
  await t.rejects(startHttpServer({ host: '127.0.0.1', port: first.port, handler: app, prefer: 'uws' }), /cannot listen/);
});

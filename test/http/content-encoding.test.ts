// Content-Encoding on request bodies: the header's parsing and the decoding function on their own,
// then the same matrix through both transports on real sockets (test routes and the assembled
// application), and the OpenAPI document. zstd data comes from the reference CLI
// (fixtures/encoding/make.sh); gzip, deflate and br from node:zlib.
import t, { type Test } from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { createApp, createAppDeps } from '../../src/app.js';
import { generateOpenApi } from '../../src/api/openapi.js';
import { loadConfig } from '../../src/config.js';
import { EngineError, type EngineService } from '../../src/engine/types.js';
import { decodeBody, parseContentEncoding } from '../../src/http/content-encoding.js';
import { createHttpApp } from '../../src/http/pipeline.js';
import { startHttpServer } from '../../src/http/server.js';
import { ACCEPTED_CODINGS, type HttpImplementation, type Route } from '../../src/api/route.js';
import { localMetricsText } from '../../src/metrics/cluster.js';
import { openStore } from '../../src/store/index.js';
import { describeFront } from '../../src/http/front.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'encoding');
const fixture = (name: string): Buffer => fs.readFileSync(path.join(dir, name));
const body = fixture('body.json');
const expected: unknown = JSON.parse(body.toString('utf8'));
const MiB = 1024 * 1024;
const ACCEPT_ENCODING = 'zstd, gzip, deflate, br';

/** `mib` MiB of zeros through a compressor, fed one reused chunk at a time so the test itself stays small. */
async function zeros(stream: zlib.Gzip | zlib.Deflate | zlib.BrotliCompress, mib: number): Promise<Buffer> {
  const out: Buffer[] = [];
  stream.on('data', (c: Buffer) => out.push(c));
  const ended = new Promise((resolve) => stream.on('end', resolve));
  const chunk = Buffer.alloc(MiB);
  for (let i = 0; i < mib; i++) {
    if (!stream.write(chunk)) await new Promise((resolve) => stream.once('drain', resolve));
  }
  stream.end();
  await ended;
  return Buffer.concat(out);
}

const encoded: Record<string, { header: string; data: Buffer }> = {
  'zstd (declared size)': { header: 'zstd', data: fixture('body.json.zst') },
  'zstd (streamed)': { header: 'zstd', data: fixture('body.json.stream.zst') },
  'zstd (two frames)': { header: 'zstd', data: fixture('body.json.multi.zst') },
  gzip: { header: 'gzip', data: zlib.gzipSync(body) },
  'x-gzip': { header: 'x-gzip', data: zlib.gzipSync(body) },
  deflate: { header: 'deflate', data: zlib.deflateSync(body) },
  br: { header: 'br', data: zlib.brotliCompressSync(body) },
  'gzip then zstd': { header: 'gzip, zstd', data: fixture('body.json.gz.zst') },
  'case and spaces': { header: ' GZIP ,ZSTD ', data: fixture('body.json.gz.zst') },
  'zstd then br, identity listed': { header: 'zstd, identity, br', data: zlib.brotliCompressSync(fixture('body.json.zst')) },
  identity: { header: 'identity', data: body },
};

/** Bombs far above the 1 MiB limit (gzip and deflate top out near 1000:1, so theirs stay under the wire limit). */
const bombs: Record<string, { header: string; data: Buffer; expands: number }> = {
  'zstd (1 GiB, streamed)': { header: 'zstd', data: fixture('bomb-1g.zst'), expands: 1024 * MiB },
  'zstd (1 GiB, declared)': { header: 'zstd', data: fixture('bomb-1g-sized.zst'), expands: 1024 * MiB },
  gzip: { header: 'gzip', data: await zeros(zlib.createGzip({ level: 9 }), 256), expands: 256 * MiB },
  deflate: { header: 'deflate', data: await zeros(zlib.createDeflate({ level: 9 }), 256), expands: 256 * MiB },
  br: { header: 'br', data: await zeros(zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } }), 1024), expands: 1024 * MiB },
};

const routes: Route[] = [
  {
    method: 'POST',
    path: '/echo',
    handler: (req) => ({ status: 200, body: { json: JSON.parse(req.body.toString('utf8')), encoding: req.headers['content-encoding'] ?? null } }),
  },
  {
    method: 'POST',
    path: '/form',
    bodyTypes: ['json', 'multipart'],
    handler: (req) => ({ status: 200, body: { bytes: req.body.length, text: req.body.toString('utf8') } }),
  },
];

const MULTIPART = Buffer.from('--XyZ\r\nContent-Disposition: form-data; name="state"\r\n\r\nhello\r\n--XyZ--\r\n');

t.test('parseContentEncoding', async (t) => {
  t.same(parseContentEncoding(undefined), { ok: true, codings: [] });
  t.same(parseContentEncoding('zstd'), { ok: true, codings: ['zstd'] });
  t.same(parseContentEncoding(' GZIP ,  Zstd '), { ok: true, codings: ['gzip', 'zstd'] }, 'case and whitespace');
  t.same(parseContentEncoding('x-gzip, deflate, br'), { ok: true, codings: ['gzip', 'deflate', 'br'] });
  t.same(parseContentEncoding('identity'), { ok: true, codings: [] });
  t.same(parseContentEncoding(',gzip,,identity,'), { ok: true, codings: ['gzip'] }, 'empty elements and identity dropped');
  t.same(parseContentEncoding('compress'), { ok: false, unsupported: 'compress' });
  t.same(parseContentEncoding('gzip, Foo'), { ok: false, unsupported: 'foo' });
  t.same(parseContentEncoding('gzip, gzip, gzip, gzip'), { ok: true, codings: ['gzip', 'gzip', 'gzip', 'gzip'] });
  t.same(parseContentEncoding('gzip, gzip, gzip, gzip, gzip'), { ok: false, tooMany: 5 });
  t.same(ACCEPTED_CODINGS.join(', '), ACCEPT_ENCODING);
});

t.test('decodeBody', async (t) => {
  for (const [name, { header, data }] of Object.entries(encoded)) {
    const parsed = parseContentEncoding(header);
    if (!parsed.ok) throw new Error(`${header} does not parse`);
    t.same(await decodeBody(data, parsed.codings, MiB), body, name);
  }
  const layered = fixture('body.json.gz.zst');
  await t.rejects(
    decodeBody(layered, ['zstd', 'gzip'], MiB),
    { name: 'BodyDecodingError', coding: 'gzip', reason: 'corrupt' },
    'the last listed coding is undone first',
  );
  for (const [coding, data] of [
    ['zstd', fixture('body.json.zst')],
    ['gzip', zlib.gzipSync(body)],
    ['deflate', zlib.deflateSync(body)],
    ['br', zlib.brotliCompressSync(body)],
  ] as const) {
    t.same(await decodeBody(data, [coding], body.length), body, `${coding} at exactly the limit`);
    await t.rejects(decodeBody(data, [coding], body.length - 1), { name: 'BodyDecodingError', coding, reason: 'too_large' }, `${coding} one byte over`);
    await t.rejects(
      decodeBody(data.subarray(0, data.length - 8), [coding], MiB),
      { name: 'BodyDecodingError', coding, reason: 'corrupt' },
      `${coding} truncated`,
    );
  }
  await t.rejects(
    decodeBody(zlib.deflateRawSync(body), ['deflate'], MiB),
    { name: 'BodyDecodingError', coding: 'deflate', reason: 'corrupt' },
    'deflate is the zlib format, not a bare stream',
  );
});

t.test('the OpenAPI document states the encodings and the errors of a body', async (t) => {
  const doc = generateOpenApi(routes) as any;
  for (const coding of ACCEPTED_CODINGS) t.match(doc.info.description, coding);
  const form = doc.paths['/form'].post;
  for (const status of ['400', '413', '415']) t.ok(form.responses[status], `${status} on a route that declares bodyTypes`);
  t.ok(form.responses['415'].headers['Accept-Encoding'], '415 documents Accept-Encoding');
  t.ok(doc.components.schemas.ErrorResponse.properties.detail.properties.error_type.anyOf.some((s: any) => s.const === 'bad_request'));
});

function post(base: string, route: string, headers: Record<string, string>, data: Buffer | string): Promise<Response> {
  const payload = typeof data === 'string' ? data : new Uint8Array(data);
  return fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload });
}

async function detail(res: Response): Promise<Record<string, unknown>> {
  return ((await res.json()) as { detail: Record<string, unknown> }).detail;
}

/** The process's peak RSS so far (ru_maxrss only grows), or its RSS now if that is higher. */
function peakRss(): number {
  return Math.max(process.resourceUsage().maxRSS * 1024, process.memoryUsage().rss);
}

for (const impl of ['uws', 'node'] as HttpImplementation[]) {
  t.test(`transport ${impl}`, async (t) => {
    const app = createHttpApp({ routes, maxBodyBytes: MiB, log: () => {} });
    const server = await startHttpServer({ host: '127.0.0.1', port: 0, handler: app, prefer: impl });
    t.teardown(() => server.close());
    t.equal(server.implementation, impl);
    const base = `http://127.0.0.1:${server.port}`;

    t.test('every coding and list decodes to the same JSON', async (t) => {
      for (const [name, { header, data }] of Object.entries(encoded)) {
        const res = await post(base, '/echo', { 'content-encoding': header }, data);
        t.equal(res.status, 200, name);
        const got = (await res.json()) as { json: unknown; encoding: string | null };
        t.same(got.json, expected, name);
        t.equal(got.encoding, header === 'identity' ? 'identity' : null, `${name}: the handler sees no coding left to undo`);
      }
      const plain = await post(base, '/echo', {}, body);
      t.same(((await plain.json()) as { json: unknown }).json, expected, 'no Content-Encoding');
    });

    t.test('a bomb of each coding is a 413 without expanding', async (t) => {
      for (const [name, { header, data, expands }] of Object.entries(bombs)) {
        const before = peakRss();
        const started = performance.now();
        const res = await post(base, '/echo', { 'content-encoding': header }, data);
        const ms = performance.now() - started;
        const growth = peakRss() - before;
        t.equal(res.status, 413, name);
        const d = await detail(res);
        t.equal(d.error_type, 'payload_too_large', name);
        t.match(d.message, /decoded request body exceeds the limit of 1048576 bytes/, name);
        t.equal(d.max_body_bytes, MiB);
        t.ok(
          growth < expands / 8 && growth < 64 * MiB,
          `${name}: ${data.length} bytes expanding to ${expands / MiB} MiB; peak RSS grew ${(growth / MiB).toFixed(1)} MiB`,
        );
        t.ok(ms < 5000, `${name}: answered in ${ms.toFixed(0)} ms`);
      }
      const after = await post(base, '/echo', { 'content-encoding': 'zstd' }, fixture('body.json.zst'));
      t.equal(after.status, 200, 'the server still serves');
    });

    t.test('data that does not decode is a 400 naming the coding', async (t) => {
      const cases: [string, string, Buffer][] = [
        ['zstd', 'zstd', fixture('body.json.zst').subarray(0, 300)],
        ['gzip', 'gzip', zlib.gzipSync(body).subarray(0, 300)],
        ['deflate', 'deflate', zlib.deflateRawSync(body)],
        ['br', 'br', Buffer.from('this is not brotli at all')],
        ['gzip', 'zstd, gzip', fixture('body.json.gz.zst')],
      ];
      for (const [coding, header, data] of cases) {
        const res = await post(base, '/echo', { 'content-encoding': header }, data);
        t.equal(res.status, 400, header);
        const d = await detail(res);
        t.equal(d.error_type, 'bad_request', header);
        t.equal(d.content_encoding, coding, header);
        t.match(d.message, `not valid ${coding} data`, header);
        t.equal(res.headers.get('x-arbitra-api-version'), '2026-10-12');
      }
    });

    t.test('an unsupported coding is a 415 with Accept-Encoding, before the body is read', async (t) => {
      for (const [header, named] of [
        ['compress', 'compress'],
        ['gzip, foo', 'foo'],
      ] as const) {
        const res = await post(base, '/echo', { 'content-encoding': header }, body);
        t.equal(res.status, 415, header);
        t.equal(res.headers.get('accept-encoding'), ACCEPT_ENCODING, header);
        const d = await detail(res);
        t.equal(d.error_type, 'unsupported_media_type');
        t.equal(d.content_encoding, named);
        t.match(d.message, `"${named}" is not supported`);
      }
      const deep = await post(base, '/echo', { 'content-encoding': 'gzip, gzip, gzip, gzip, gzip' }, body);
      t.equal(deep.status, 415, 'five layers');
      t.match((await detail(deep)).message, /at most 4 content codings/);
      // Only a refusal before the body is read closes the connection (the rest of the body is unread).
      const early = await post(base, '/echo', { 'content-encoding': 'compress' }, body);
      t.equal(early.headers.get('connection'), 'close', 'refused in precheck');
    });

    t.test('multipart only where the route declares it', async (t) => {
      const form = await post(base, '/form', { 'content-type': 'multipart/form-data; boundary=XyZ' }, MULTIPART);
      t.equal(form.status, 200);
      t.same(await form.json(), { bytes: MULTIPART.length, text: MULTIPART.toString('utf8') });
      const zipped = await post(base, '/form', { 'content-type': 'multipart/form-data; boundary="XyZ"', 'content-encoding': 'gzip' }, zlib.gzipSync(MULTIPART));
      t.same(await zipped.json(), { bytes: MULTIPART.length, text: MULTIPART.toString('utf8') }, 'a compressed form is decoded too');
      const json = await post(base, '/form', {}, body);
      t.equal(json.status, 200, 'JSON still works on a multipart route');
      const noBoundary = await post(base, '/form', { 'content-type': 'multipart/form-data' }, MULTIPART);
      t.equal(noBoundary.status, 415, 'multipart without a boundary');
      t.match((await detail(noBoundary)).message, 'application/json or multipart/form-data with a boundary parameter');
      const elsewhere = await post(base, '/echo', { 'content-type': 'multipart/form-data; boundary=XyZ' }, MULTIPART);
      t.equal(elsewhere.status, 415, 'multipart on a JSON-only route');
      const d = await detail(elsewhere);
      t.equal(d.error_type, 'unsupported_media_type');
      t.equal(d.message, 'Request bodies of POST /echo must be sent with Content-Type: application/json.');
      t.equal(elsewhere.headers.get('accept-encoding'), ACCEPT_ENCODING, 'every 415 names the codings taken');
      const text = await post(base, '/form', { 'content-type': 'text/plain' }, 'hello');
      t.equal(text.status, 415, 'other types stay refused on a multipart route');
    });
  });
}

const loading: EngineService = {
  info: () => Promise.reject(new EngineError('unavailable', 'loading')),
  scoreText: () => Promise.reject(new EngineError('unavailable', 'loading')),
};

async function serveApp(t: Test, impl: HttpImplementation): Promise<string> {
  const data = t.testdir();
  const config = loadConfig(['--data-dir', data, '--port', '0'], {});
  const store = await openStore(data);
  const deps = createAppDeps(config, {
    engine: loading,
    engines: () => [{ engine: 0, device: null, status: 'loading', determinism: null, kernelPath: null }],
    store,
    workers: 1,
    httpFront: () => describeFront(impl),
    metricsText: localMetricsText,
    log: () => {},
  });
  const server = await startHttpServer({ host: '127.0.0.1', port: 0, handler: createApp(deps), prefer: impl });
  t.teardown(async () => {
    await server.close();
    await store.close();
  });
  return `http://127.0.0.1:${server.port}`;
}

for (const impl of ['uws', 'node'] as HttpImplementation[]) {
  t.test(`the assembled application on ${impl} decodes before its routes validate`, async (t) => {
    const base = await serveApp(t, impl);
    const signup = Buffer.from(JSON.stringify({ email: 'dana@example.com', use_case: 'Routing refund requests in our shop.', consent: true }));
    const ok = await post(base, '/v1/waitlist', { 'content-encoding': 'gzip' }, zlib.gzipSync(signup));
    t.equal(ok.status, 200, 'a gzip sign-up is taken');
    const res = await post(base, '/v1/waitlist', { 'content-encoding': 'zstd' }, fixture('body.json.zst'));
    t.equal(res.status, 422, 'the decoded JSON reaches validation');
    const items = ((await res.json()) as { detail: { type: string; loc: unknown[] }[] }).detail;
    t.ok(
      items.some((d) => d.type === 'missing' && d.loc.join('.') === 'body.email'),
      'a missing member, not json_invalid',
    );
    const bomb = await post(base, '/v1/waitlist', { 'content-encoding': 'zstd' }, fixture('bomb-1g.zst'));
    t.equal(bomb.status, 413, 'the configured limit applies to the decoded body');
  });
}

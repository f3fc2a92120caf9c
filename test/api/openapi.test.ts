// The OpenAPI document lists every status each route can answer: the generator's own rules (auth,
// body, path, the pipeline's gate) and what the routes declare beyond them.
import t from 'tap';
import { apiRoutes, createAppDeps } from '../../src/app.js';
import { ERROR_CODES } from '../../src/api/errors.js';
import { generateOpenApi } from '../../src/api/openapi.js';
import { MAX_PATH_ID_LENGTH } from '../../src/api/schemas/common.js';
import { loadConfig } from '../../src/config.js';
import { EngineError, type EngineService } from '../../src/engine/types.js';
import { localMetricsText } from '../../src/metrics/cluster.js';
import { openStore } from '../../src/store/index.js';
import { describeFront } from '../../src/http/front.js';

const dir = t.testdir();
const store = await openStore(dir);
t.teardown(() => store.close());
const loading: EngineService = {
  info: () => Promise.reject(new EngineError('unavailable', 'loading')),
  scoreText: () => Promise.reject(new EngineError('unavailable', 'loading')),
};
const config = loadConfig(['--data-dir', dir, '--port', '0'], {});
const routes = apiRoutes(
  createAppDeps(config, {
    engine: loading,
    engines: () => [{ engine: 0, device: null, status: 'loading', determinism: null, kernelPath: null }],
    store,
    workers: 1,
    httpFront: () => describeFront('node'),
    metricsText: localMetricsText,
    log: () => {},
  }),
);
const doc = generateOpenApi(routes) as any;
const op = (method: string, path: string) => doc.paths[path][method];
const statuses = (method: string, path: string) => Object.keys(op(method, path).responses).map(Number);

t.test('statuses the routes declare', async (t) => {
  const health = op('get', '/health').responses;
  t.ok(health['503'], '/health is 503 while the model loads');
  t.same(health['503'].content, health['200'].content, '... with its usual body, not the error shape');
  t.ok(health['503'].headers['Retry-After']);
  for (const s of [404, 409, 410]) t.ok(statuses('post', '/v1/console/verification-tokens/use').includes(s), `verification-tokens/use ${s}`);
  t.ok(statuses('post', '/v1/waitlist').includes(429), 'the waitlist is limited per IP');
  for (const s of [402, 404, 409, 429, 503]) t.ok(statuses('post', '/v1/systemone').includes(s), `systemone ${s}`);
  t.match(op('post', '/v1/systemone').responses['504']?.description, /deadline_exceeded/, 'systemone 504 deadline_exceeded');
  t.match(op('post', '/v1/console/api-keys').responses['409']?.description, /conflict/, 'a key past the per-user limit is a 409');
  t.ok(statuses('get', '/v1/models').includes(503), 'models ask the engine');
  for (const [method, path] of [
    ['delete', '/v1/retention/{request_id}'],
    ['get', '/v1/console/api-keys'],
    ['post', '/v1/waitlist'],
  ] as const) {
    t.ok(statuses(method, path).includes(503), `${path}: 503 when the store is unreachable`);
  }
  t.same(Object.keys(op('get', '/metrics').responses['200'].content), ['text/plain'], '/metrics is Prometheus text, not JSON');
  t.equal(op('post', '/v1/systemone').requestBody.required, true, 'a decision needs its body');
  t.equal(op('post', '/v1/console/users/sync').requestBody.required, false, 'a body with no required member may be left out');
  t.match(
    op('post', '/v1/systemone').description,
    /at most 100 questions and at most 800 scored branches.*after 600 s/,
    'the per-request caps and deadline are stated',
  );
});

t.test('statuses the generator adds', async (t) => {
  for (const [method, path, name] of [
    ['delete', '/v1/retention/{request_id}', 'request_id'],
    ['delete', '/v1/console/api-keys/{key_id}', 'key_id'],
  ] as const) {
    t.same(op(method, path).responses['422'].content['application/json'].schema, { $ref: '#/components/schemas/HTTPValidationError' }, `${path}: 422`);
    t.ok(statuses(method, path).includes(404), `${path}: 404`);
    t.ok(statuses(method, path).includes(415), `${path}: a DELETE body is gated like any other`);
    const param = op(method, path).parameters.find((p: { name: string }) => p.name === name);
    t.equal(param.schema.maxLength, MAX_PATH_ID_LENGTH, `${path}: the id length is documented`);
  }
  t.ok(op('get', '/v1/console/account').responses['422'], 'console routes validate the user email header');
  t.notOk(op('get', '/health').responses['422'], 'a route with nothing to validate has no 422');
  for (const route of routes) {
    const got = statuses(route.method.toLowerCase(), route.path);
    t.ok(got.includes(413) && got.includes(500), `${route.method} ${route.path}: 413 and 500`);
    if (route.method === 'GET') t.notOk(got.includes(415), `${route.method} ${route.path}: no body, no 415`);
    const known = new Set<number>([200, 422, ...Object.values(ERROR_CODES)]);
    t.same(
      got.filter((s) => !known.has(s)),
      [],
      `${route.method} ${route.path}: only statuses the service has`,
    );
  }
});

// The assembled application on a real server and real LMDB: /health, /metrics, /openapi.json and
// /v1/models. The engine is in the state a real server is in while the model loads (the
// decision tests cover a loaded model); what depends on a loaded model is checked in the
// real-model test that follows when the model file is present.
import t, { type Test } from 'tap';
import fs from 'node:fs';
import { apiRoutes, buildRoutes, createApp, createAppDeps } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { presetCalibration } from '../../src/decision/calibration-presets.js';
import { LAYOUT_VERSION } from '../../src/decision/prompt.js';
import { NO_PRESET } from '../../src/decision/served-quality.js';
import { EngineError, promptCapacity, type EngineInfo, type EngineService } from '../../src/engine/types.js';
import { startHttpServer } from '../../src/http/server.js';
import { localMetricsText } from '../../src/metrics/cluster.js';
import { openStore } from '../../src/store/index.js';
import { createLocalEngine } from '../../src/engine/local.js';
import type { EngineState, EngineStatus } from '../../src/engine/ipc.js';
import { servedPath } from '../../src/engine/exact-path.js';
import { TEST_MODEL } from '../helpers/models.js';
import { DEFAULT_MODEL } from '../../src/models/catalogue.js';
import { describeFront } from '../../src/http/front.js';

async function serve(
  t: Test,
  engine: EngineService,
  status: () => EngineStatus,
  state: Pick<EngineState, 'determinism' | 'kernelPath'> = { determinism: null, kernelPath: null },
) {
  const dir = t.testdir();
  const config = loadConfig(['--data-dir', dir, '--port', '0'], { ARBITRA_MODEL_ALIASES: 'fast=default' });
  const store = await openStore(dir);
  const deps = createAppDeps(config, {
    engine,
    engines: () => [{ engine: 0, device: null, status: status(), ...state }],
    store,
    workers: 3,
    httpFront: () => describeFront('uws'),
    metricsText: localMetricsText,
    log: () => {},
  });
  const server = await startHttpServer({ host: '127.0.0.1', port: 0, handler: createApp(deps), prefer: 'uws' });
  t.teardown(async () => {
    await server.close();
    await store.close();
  });
  const { secret } = await store.keys.create('dev@example.com', 'test');
  return { base: `http://127.0.0.1:${server.port}`, secret, deps };
}

const loading: EngineService = {
  info: () => Promise.reject(new EngineError('unavailable', 'loading')),
  scoreText: () => Promise.reject(new EngineError('unavailable', 'loading')),
};

t.test('while the model loads', async (t) => {
  const { base, secret, deps } = await serve(t, loading, () => 'loading');

  const health = await fetch(`${base}/health`);
  t.equal(health.status, 503);
  t.ok(health.headers.get('retry-after'));
  const h = await health.json();
  t.match(h, { status: 'loading', api_version: '2026-10-12', model: { id: DEFAULT_MODEL.name, loaded: false }, workers: 3, http: 'uws' });
  t.equal(h.model.quality, null, "no figures until the model file's checksum is known");
  t.type(h.uptime_s, 'number');

  const anon = await fetch(`${base}/v1/models`);
  t.equal(anon.status, 401);
  t.equal((await anon.json()).detail.error_type, 'authentication_error');
  const models = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
  t.equal(models.status, 503, 'an engine that is not ready is a 503, not a 500');
  t.equal(models.headers.get('retry-after'), '2');
  t.equal((await models.json()).detail.error_type, 'service_unavailable');

  t.same(deps.models.names, [DEFAULT_MODEL.name, 'jev-latest', 'jev-preview', 'default', 'fast']);
  t.equal(deps.models.resolve('jev-latest'), DEFAULT_MODEL.name);
  t.equal(deps.models.resolve(undefined), DEFAULT_MODEL.name);
  t.equal(deps.models.resolve('fast'), DEFAULT_MODEL.name);
  t.equal(deps.models.resolve('gpt-4'), null);
  t.match(deps.models.unknown('gpt-4'), { status: 404, code: 'not_found', context: { available_models: deps.models.names } });
});

t.test('an engine on a path the exact kernels do not cover: /health says deterministic false with the reasons, whatever its probe saw', async (t) => {
  const ready = { ...loading, info: async () => ({ sha256: DEFAULT_MODEL.sha256 }) as EngineInfo };
  const kernelPath = servedPath({
    backend: 'cuda',
    kernels: 'exact',
    kvLayout: 'shared',
    quantMethod: 'F16',
    flashAttention: false,
    flashAttentionOnLayerDevice: false,
    kvGather: false,
    offloadedLayers: 29,
    offloadableLayers: 29,
    experts: 0,
    headSizeK: 128,
    headSizeV: 128,
    cpuVariant: 'built-in',
    cpuVariants: [],
    cpuProducts: 'llama.cpp',
  });
  const determinism = {
    kernels: 'exact' as const,
    deterministic: true,
    maxDifference: 0,
    differences: { cached: 0, crowded: 0, headCached: 0, pastWindow: null },
    stockDifference: 0,
    fallback: null,
  };
  const { base } = await serve(t, ready, () => 'ready', { determinism, kernelPath });
  const [engine] = (await (await fetch(`${base}/health`)).json()).engines;
  t.match(engine, { kernels: 'exact', deterministic: false, max_difference: 0, path: { flash_attention: false, kv_gather: false, covered: false } });
  t.match(engine.path.uncovered, [/^flash attention is off/, /shared pool's gather is off/, /^F16 weights/]);
});

t.test("/health's model.quality: the default model's shipped figures, as read under --calibration off", async (t) => {
  const ready = { ...loading, info: async () => ({ sha256: DEFAULT_MODEL.sha256 }) as EngineInfo };
  const { base } = await serve(t, ready, () => 'ready');
  const h = await (await fetch(`${base}/health`)).json();
  const preset = presetCalibration(DEFAULT_MODEL.sha256, LAYOUT_VERSION)!;
  const noul = preset.reports.find((r) => r.kind === 'noul')!.before;
  t.match(h.model.quality, {
    layout: LAYOUT_VERSION,
    version: preset.version,
    source: preset.source,
    calibration: 'off',
    types: {
      noul: { n: noul.n, overconfidence: noul.overconfidence, ece: noul.ece, accuracy: noul.accuracy, calibrated: false },
      choice: { calibrated: false },
      score: { calibrated: false },
    },
  });
});

t.test('/metrics counts requests by route, method and status', async (t) => {
  const { base } = await serve(t, loading, () => 'loading');
  await fetch(`${base}/health`);
  await fetch(`${base}/nowhere`);
  const res = await fetch(`${base}/metrics`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/plain/);
  t.equal(res.headers.get('x-arbitra-api-version'), '2026-10-12');
  const text = await res.text();
  t.match(text, /arbitra_http_requests_total\{route="\/health",method="GET",status="503"\} \d+/);
  t.match(text, /arbitra_http_requests_total\{route="unmatched",method="GET",status="404"\} \d+/);
  t.match(text, /arbitra_http_request_duration_seconds_bucket\{le="0.005",route="\/health",method="GET"\} \d+/);
});

t.test('/openapi.json describes every route with its schemas and errors', async (t) => {
  const { base, deps } = await serve(t, loading, () => 'loading');
  const res = await fetch(`${base}/openapi.json`);
  t.equal(res.status, 200);
  const doc = await res.json();
  t.equal(doc.openapi, '3.1.0');
  t.equal(doc.info.version, '2026-10-12');
  const routes = apiRoutes(deps);
  for (const r of routes) t.ok(doc.paths[r.path]?.[r.method.toLowerCase()], `${r.method} ${r.path}`);
  const documented = new Set(routes.map((r) => `${r.method} ${r.path}`));
  const page = buildRoutes(deps).filter((r) => !documented.has(`${r.method} ${r.path}`));
  t.ok(page.length > 0 && page.every((r) => r.path.startsWith('/console')), 'besides the API, only the console page is served');
  for (const r of page) t.notOk(doc.paths[r.path], `${r.path}, the page, is not in the API's document`);
  const decide = doc.paths['/v1/systemone']?.post;
  t.ok(decide?.requestBody?.content['application/json'].schema, 'the decision body schema');
  t.same(decide.security, [{ bearerAuth: [] }]);
  t.equal(decide.responses['422'].content['application/json'].schema.$ref, '#/components/schemas/HTTPValidationError');
  t.equal(decide.responses['401'].content['application/json'].schema.$ref, '#/components/schemas/ErrorResponse');
  t.ok(decide.responses['413'] && decide.responses['415']);
  const models = doc.paths['/v1/models'].get;
  t.equal(models.responses['200'].content['application/json'].schema.properties.models.type, 'array');
  t.ok(doc.components.schemas.ErrorResponse.properties.detail.properties.error_type.anyOf.some((s: any) => s.const === 'rate_limited'));
  t.notMatch(JSON.stringify(doc), /"\$id"/, 'no stray $id');
});

const modelFile = TEST_MODEL;
t.test('with the real model loaded', { skip: !fs.existsSync(modelFile) && 'the test model is not downloaded' }, async (t) => {
  const engine = await createLocalEngine(modelFile, { contextSize: 2048, maxSequences: 4 });
  t.teardown(() => engine.close());
  const { base, secret } = await serve(t, engine, () => 'ready');
  const health = await fetch(`${base}/health`);
  t.equal(health.status, 200);
  t.match(await health.json(), { status: 'ok', model: { id: DEFAULT_MODEL.name, loaded: true, quality: { unavailable: NO_PRESET } } });
  const res = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
  t.equal(res.status, 200);
  const body = await res.json();
  t.equal(body.object, 'list');
  t.same(body.models, body.data);
  t.same(
    body.data.map((m: any) => m.id),
    [DEFAULT_MODEL.name, 'jev-latest', 'jev-preview', 'default', 'fast'],
  );
  const info = await engine.info();
  for (const m of body.data)
    t.match(m, {
      object: 'model',
      owned_by: 'arbitra',
      max_context_tokens: promptCapacity(info),
      description: String,
      name: m.id,
      release_date: /^\d{4}-\d{2}-\d{2}$/,
    });
});

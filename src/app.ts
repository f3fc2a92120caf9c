// Assembly of every route of the service from its owners' modules. Nothing here decides anything;
// each route module names the dependencies it needs and receives them from AppDeps.
import { createGate, createIpLimiter, type IpLimiter } from './api/gate.js';
import type { Route } from './api/route.js';
import type { HttpFront } from './api/schemas/health.js';
import { createSecretThrottle, type SecretThrottle } from './api/secret-throttle.js';
import { healthRoutes } from './api/routes/health.js';
import { metricsRoutes } from './api/routes/metrics.js';
import { createModelCatalog, modelsRoutes, type ModelCatalog } from './api/routes/models.js';
import { openapiRoutes } from './api/routes/openapi.js';
import { retentionRoutes } from './api/routes/retention.js';
import { systemoneRoutes, type PrefixCacheScope } from './api/routes/systemone.js';
import { tracesRoutes } from './api/routes/traces.js';
import { waitlistRoutes } from './api/routes/waitlist.js';
import type { Config } from './config.js';
import type { CalibrationMode } from './decision/calibration.js';
import { consolePageRoutes } from './console/page.js';
import { consoleRoutes } from './console/routes.js';
import { consoleSessionRoutes } from './console/session-routes.js';
import type { EngineState } from './engine/ipc.js';
import type { EngineService } from './engine/types.js';
import { createHttpApp } from './http/pipeline.js';
import type { HttpApp } from './http/types.js';
import type { LimitsConfig } from './limits/config.js';
import type { RequestGate } from './limits/types.js';
import { httpMetrics } from './metrics/http.js';
import type { MetricsText } from './metrics/cluster.js';
import type { Store } from './store/index.js';

export interface AppDeps {
  config: Config;
  engine: EngineService;
  engines: () => EngineState[];
  store: Store;
  models: ModelCatalog;
  gate: RequestGate;
  ipLimiter: IpLimiter;
  secretThrottle: SecretThrottle;
  limits: LimitsConfig;
  consoleToken: string | undefined;
  /** Prompt tokens a state may take without the long-context header. */
  contextTokens: number | null;
  /** Which calibration answers are served with (--calibration). */
  calibration: CalibrationMode;
  prefixCacheScope: PrefixCacheScope;
  workers: number;
  httpFront: () => HttpFront;
  metricsText: () => Promise<MetricsText>;
  startedAt: number;
  log: (line: string) => void;
}

export interface AppRuntime {
  engine: EngineService;
  engines: () => EngineState[];
  store: Store;
  /** Worker processes of the whole service, for /health. */
  workers: number;
  httpFront: () => HttpFront;
  metricsText: () => Promise<MetricsText>;
  log: (line: string) => void;
}

export function createAppDeps(config: Config, rt: AppRuntime): AppDeps {
  return {
    ...rt,
    config,
    models: createModelCatalog(config.model, config.modelAliases),
    gate: createGate(rt.store, config.limits),
    ipLimiter: createIpLimiter(rt.store, config.limits),
    secretThrottle: createSecretThrottle(rt.store, config.limits),
    limits: config.limits,
    consoleToken: config.consoleToken,
    contextTokens: config.contextTokens,
    calibration: config.calibration,
    prefixCacheScope: config.prefixCacheScope,
    startedAt: Date.now(),
  };
}

/** The API: every route the OpenAPI document describes, that document's own route included. */
export function apiRoutes(deps: AppDeps): Route[] {
  const routes: Route[] = [
    ...healthRoutes({ ...deps, modelId: deps.models.id }),
    ...metricsRoutes(deps),
    ...modelsRoutes(deps),
    ...systemoneRoutes(deps),
    ...tracesRoutes(deps),
    ...retentionRoutes(deps),
    ...waitlistRoutes(deps),
    ...consoleRoutes(deps),
    ...consoleSessionRoutes(deps),
  ];
  routes.push(...openapiRoutes({ routes: () => routes }));
  return routes;
}

/** Every route served: the API, and the console's page and assets, which are not part of it. */
export function buildRoutes(deps: AppDeps): Route[] {
  return [...apiRoutes(deps), ...consolePageRoutes()];
}

/** The HttpApp both transports serve: every route, the body limit, the trusted proxies, HTTP metrics. */
export function createApp(deps: AppDeps): HttpApp {
  return createHttpApp({
    routes: buildRoutes(deps),
    maxBodyBytes: deps.config.maxBodyBytes,
    trustedProxies: deps.config.trustedProxies,
    metrics: httpMetrics(),
    log: deps.log,
  });
}

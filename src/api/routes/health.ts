// GET /health: liveness plus what an operator checks first. 503 while no engine has its model
// loaded, so load balancers hold traffic back until decisions can be served; each engine's own
// state is listed, so one GPU down behind a serving node is seen too.
import { Type } from '@sinclair/typebox';
import { ALSO_STATUSES } from '../openapi.js';
import { API_VERSION } from '../render.js';
import { serviceStatus, type EngineState } from '../../engine/ipc.js';
import type { HttpImplementation, Route } from '../../http/types.js';

export const HealthResponse = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('loading'), Type.Literal('down')]),
  api_version: Type.String(),
  model: Type.Object({ id: Type.String(), loaded: Type.Boolean() }),
  workers: Type.Integer({ description: 'HTTP worker processes (0: a single process serves everything)' }),
  uptime_s: Type.Integer(),
  http: Type.Union([Type.Literal('uws'), Type.Literal('node')]),
  pid: Type.Integer(),
  engines: Type.Array(
    Type.Object({
      engine: Type.Integer({ description: 'place in the service\'s list of engines' }),
      device: Type.Union([Type.Integer(), Type.Null()], { description: 'the GPU given to it (--gpus); null: every device the build sees' }),
      status: Type.Union([Type.Literal('ready'), Type.Literal('loading'), Type.Literal('down')]),
    }),
  ),
}, { [ALSO_STATUSES]: [503] });

export interface HealthRouteDeps {
  modelId: string;
  engines: () => EngineState[];
  workers: number;
  httpImplementation: () => HttpImplementation;
  /** Date.now() at process start. */
  startedAt: number;
}

export function healthRoutes(deps: HealthRouteDeps): Route[] {
  return [
    {
      method: 'GET',
      path: '/health',
      summary: 'Service status, API version and whether the model is loaded',
      auth: 'none',
      schemas: { response: HealthResponse },
      handler() {
        const engines = deps.engines();
        const engine = serviceStatus(engines);
        const status = engine === 'ready' ? 'ok' : engine;
        return {
          status: engine === 'ready' ? 200 : 503,
          headers: engine === 'ready' ? undefined : { 'retry-after': '2', 'retry-after-ms': '2000' },
          body: {
            status,
            api_version: API_VERSION,
            model: { id: deps.modelId, loaded: engine === 'ready' },
            workers: deps.workers,
            uptime_s: Math.floor((Date.now() - deps.startedAt) / 1000),
            http: deps.httpImplementation(),
            pid: process.pid,
            engines,
          },
        };
      },
    },
  ];
}

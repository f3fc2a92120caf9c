// GET /health's answer, which the browser console reads too.
import { Type } from '@sinclair/typebox';
import { ALSO_STATUSES } from './common.js';

export const HealthResponse = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('loading'), Type.Literal('down')]),
    api_version: Type.String(),
    model: Type.Object({ id: Type.String(), loaded: Type.Boolean() }),
    workers: Type.Integer({ description: 'HTTP worker processes (0: a single process serves everything)' }),
    uptime_s: Type.Integer(),
    http: Type.Union([Type.Literal('uws'), Type.Literal('node')]),
    pid: Type.Integer(),
    store: Type.Object({
      status: Type.Union([Type.Literal('ok'), Type.Literal('unreachable')], {
        description: 'unreachable: the database did not answer; the node cannot serve decisions',
      }),
    }),
    engines: Type.Array(
      Type.Object({
        engine: Type.Integer({ description: "place in the service's list of engines" }),
        device: Type.Union([Type.Integer(), Type.Null()], { description: 'the GPU given to it (--gpus); null: every device the build sees' }),
        status: Type.Union([Type.Literal('ready'), Type.Literal('loading'), Type.Literal('down'), Type.Literal('wedged')], {
          description: 'wedged: it holds work and has finished no decode within its liveness bound; a local engine is then restarted',
        }),
        message: Type.Optional(Type.String({ description: 'why it is not ready' })),
      }),
    ),
  },
  { [ALSO_STATUSES]: [503] },
);

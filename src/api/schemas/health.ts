// GET /health's answer, which the browser console reads too.
import { Type, type Static } from '@sinclair/typebox';
import { ServedQuality } from '../../decision/schema/quality.js';
import { ALSO_STATUSES } from './common.js';

/** The HTTP front that serves, and where its code came from (docs/security.md records what is known of it). */
export const HttpFront = Type.Object({
  implementation: Type.Union([Type.Literal('uws'), Type.Literal('node')]),
  package: Type.String({ description: 'the package and version of the code that parses HTTP: uwebsockets@3.0.6, or node:http@<Node version>' }),
  binary_sha256: Type.Union([Type.String(), Type.Null()], {
    description: "SHA-256 of the native binary loaded for uWS, to compare with docs/security.md's record; null for node:http, which is Node's own",
  }),
});
export type HttpFront = Static<typeof HttpFront>;

export const HealthResponse = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('loading'), Type.Literal('down')]),
    api_version: Type.String(),
    model: Type.Object({ id: Type.String(), loaded: Type.Boolean(), quality: ServedQuality }),
    workers: Type.Integer({ description: 'HTTP worker processes (0: a single process serves everything)' }),
    uptime_s: Type.Integer(),
    http: Type.Union([Type.Literal('uws'), Type.Literal('node')]),
    http_front: HttpFront,
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
        kernels: Type.Union([Type.Literal('exact'), Type.Literal('fast'), Type.Null()], {
          description: 'the kernels it serves with (exact: batch-invariant); null until it has loaded',
        }),
        deterministic: Type.Union([Type.Boolean(), Type.Null()], {
          description:
            "whether it keeps the promise of the same bits whatever the load: its path is one the exact kernels cover (path.covered) and its check at load, on its own model and hardware, gave a probe's log-probabilities bit for bit alone, on its cached prefix, in a crowded batch and after a cached head; false on an uncovered path whatever the check saw; null: not checked on a covered path (loading, or ARBITRA_DETERMINISM_CHECK=off)",
        }),
        max_difference: Type.Union([Type.Number(), Type.Null()], { description: 'the largest difference of a log-probability that check saw, in nats' }),
        kernels_note: Type.Optional(Type.String({ description: 'why it serves the stock kernels although exact ones were asked for' })),
        path: Type.Union(
          [
            Type.Object({
              flash_attention: Type.Boolean({ description: 'flash attention as its contexts resolved it (exact kernels ask for it on)' }),
              kv_gather: Type.Boolean({ description: "the shared pool's attention reads its cells gathered in position order, as resolved" }),
              cpu_variant: Type.String({
                description:
                  'the CPU backend variant its process loaded ("zen4", "haswell"; "built-in" for a build without variants): bits are the same within a variant, so nodes that must agree pin one (--cpu-variant)',
              }),
              cpu_variants: Type.Array(Type.String(), { description: "the build's variants this processor can run, best first" }),
              cpu_products: Type.Union([Type.Literal('arbitra'), Type.Literal('llama.cpp')], {
                description:
                  "whose matrix products the CPU backend runs for quantized weights (Q4_K, Q5_K, Q6_K, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): the engine's own, or llama.cpp's (ARBITRA_INT8_KERNELS=off, a processor without AVX2, FMA and F16C, not x86-64)",
              }),
              covered: Type.Boolean({ description: "the exact kernels' promise covers this path" }),
              uncovered: Type.Array(Type.String(), { description: 'why it does not; empty when it does' }),
            }),
            Type.Null(),
          ],
          { description: 'the path it runs on, as resolved at load; null until it has loaded' },
        ),
      }),
    ),
  },
  { [ALSO_STATUSES]: [503] },
);

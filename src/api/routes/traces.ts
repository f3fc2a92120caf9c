// POST /v1/traces: observed outcomes of earlier decisions, for calibration from real outcomes.
// A trace names the decision (request_id = the SystemOneResponse id) and question, and the outcome
// that turned out true. Items are checked one by one: good ones are stored, bad ones are reported
// with their index and reason, so one bad item never loses a batch.
import { Type, type Static } from '@sinclair/typebox';
import { ValidationFailure } from '../errors.js';
import { authenticate } from '../auth.js';
import type { SecretThrottle } from '../secret-throttle.js';
import { valueError } from '../../decision/schema/problems.js';
import { parseJsonBody } from '../json-body.js';
import { compileValidator } from '../validation.js';
import type { Route } from '../route.js';
import type { Store } from '../../store/index.js';
import type { TraceRecord } from '../../store/types.js';

export const MAX_TRACES_PER_REQUEST = 1000;
export const MAX_TRACE_METADATA_BYTES = 16 * 1024;

export const TraceItem = Type.Object({
  request_id: Type.String({ minLength: 1, maxLength: 200, description: 'The id of the decision response.' }),
  question: Type.Optional(
    Type.Union([Type.String({ maxLength: 200 }), Type.Null()], {
      description: 'Question name in that request; absent or null when the outcome is for the whole request.',
    }),
  ),
  outcome: Type.Union([Type.String({ minLength: 1, maxLength: 500 }), Type.Number(), Type.Boolean()], {
    description: 'What turned out true: a choice label, a score level index, or a boolean for noul.',
  }),
  observed_at: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()], { description: 'ISO 8601 time.' })),
  metadata: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
});

export const TraceIngestRequest = Type.Union([TraceItem, Type.Array(TraceItem, { maxItems: MAX_TRACES_PER_REQUEST })]);

export const TraceIngestResponse = Type.Object({
  accepted: Type.Integer(),
  rejected: Type.Array(Type.Object({ index: Type.Integer(), reason: Type.String() })),
});

export function tracesRoutes(deps: { store: Store; secretThrottle: SecretThrottle }): Route[] {
  const checkItem = compileValidator(TraceItem, []);
  return [
    {
      method: 'POST',
      path: '/v1/traces',
      summary: `Ingest observed outcomes (one trace or an array of up to ${MAX_TRACES_PER_REQUEST}).`,
      schemas: { body: TraceIngestRequest, response: TraceIngestResponse },
      auth: 'api_key',
      tag: 'traces',
      handler: async (req) => {
        const key = await authenticate(req, deps.store.keys, deps.secretThrottle);
        const raw = parseJsonBody(req);
        const items: unknown[] = Array.isArray(raw) ? raw : [raw];
        if (raw === null || typeof raw !== 'object') {
          throw new ValidationFailure([valueError(['body'], 'expected a trace object or an array of them', raw)]);
        }
        if (items.length > MAX_TRACES_PER_REQUEST) {
          throw new ValidationFailure([
            {
              type: 'too_long',
              loc: ['body'],
              msg: `List should have at most ${MAX_TRACES_PER_REQUEST} items after validation, not ${items.length}`,
              input: null,
              ctx: { field_type: 'List', max_length: MAX_TRACES_PER_REQUEST, actual_length: items.length },
            },
          ]);
        }
        const receivedAt = new Date().toISOString();
        const records: TraceRecord[] = [];
        const rejected: { index: number; reason: string }[] = [];
        items.forEach((item, index) => {
          const reason = problem(item, checkItem);
          if (reason) {
            rejected.push({ index, reason });
            return;
          }
          const t = item as Static<typeof TraceItem>;
          records.push({
            key_id: key.id,
            request_id: t.request_id,
            question: t.question ?? '',
            outcome: t.outcome,
            observed_at: t.observed_at ? new Date(t.observed_at).toISOString() : null,
            metadata: t.metadata ?? null,
            received_at: receivedAt,
          });
        });
        await deps.store.traces.putMany(records);
        return { status: 200, body: { accepted: records.length, rejected } };
      },
    },
  ];
}

function problem(item: unknown, check: (v: unknown) => { loc: (string | number)[]; msg: string }[]): string | null {
  const errors = check(item);
  if (errors.length > 0) return errors.map((e) => (e.loc.length ? `${e.loc.join('.')}: ${e.msg}` : e.msg)).join('; ');
  const t = item as Static<typeof TraceItem>;
  if (typeof t.outcome === 'number' && !Number.isFinite(t.outcome)) return 'outcome: must be a finite number';
  if (t.observed_at && !Number.isFinite(Date.parse(t.observed_at))) return 'observed_at: not an ISO 8601 time';
  if (t.metadata && Buffer.byteLength(JSON.stringify(t.metadata)) > MAX_TRACE_METADATA_BYTES) {
    return `metadata: larger than ${MAX_TRACE_METADATA_BYTES} bytes as JSON`;
  }
  return null;
}

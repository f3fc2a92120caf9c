// POST /v1/traces: observed outcomes of earlier decisions, for calibration from real outcomes.
// A trace names the decision (request_id = the SystemOneResponse id) and question, and the outcome
// that turned out true. Items are checked one by one: good ones are stored, bad ones are reported
// with their index and reason, so one bad item never loses a batch. Only a decision this key made
// and retained can be traced (calibration joins each trace with that retained decision, so a trace
// of any other id would only take space), a trace lasts as long as its decision is retained, and a
// key keeps at most its quota of traces: what one key sends costs no one else disk.
import { Type, type Static } from '@sinclair/typebox';
import { ApiError, ValidationFailure } from '../errors.js';
import { authenticate } from '../auth.js';
import type { SecretThrottle } from '../secret-throttle.js';
import { valueError } from '../../decision/schema/problems.js';
import { parseJsonBody } from '../json-body.js';
import { compileValidator } from '../validation.js';
import type { Route } from '../route.js';
import type { LimitsConfig } from '../../limits/config.js';
import { latestTraces, traceBytes, type Store } from '../../store/index.js';
import type { TraceQuota, TraceRecord } from '../../store/types.js';

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

export function tracesRoutes(deps: { store: Store; limits: Pick<LimitsConfig, 'tracesMax' | 'tracesMaxBytes'>; secretThrottle: SecretThrottle }): Route[] {
  const checkItem = compileValidator(TraceItem, []);
  const quota: TraceQuota = { traces: deps.limits.tracesMax, bytes: deps.limits.tracesMaxBytes };
  return [
    {
      method: 'POST',
      path: '/v1/traces',
      summary: `Ingest observed outcomes of this key's retained decisions (one trace or an array of up to ${MAX_TRACES_PER_REQUEST}).`,
      schemas: { body: TraceIngestRequest, response: TraceIngestResponse },
      auth: 'api_key',
      tag: 'traces',
      // 429: more than what is left of the key's trace quota. A request that alone is more than the
      // whole quota is a 413, which every route lists already.
      errorStatuses: [429],
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
        const rejected: { index: number; reason: string }[] = [];
        const valid: { index: number; item: Static<typeof TraceItem> }[] = [];
        items.forEach((item, index) => {
          const reason = problem(item, checkItem);
          if (reason) rejected.push({ index, reason });
          else valid.push({ index, item: item as Static<typeof TraceItem> });
        });
        const now = Date.now();
        const retained = await deps.store.retention.retainedUntil(key.id, [...new Set(valid.map((v) => v.item.request_id))]);
        const receivedAt = new Date(now).toISOString();
        const records: Omit<TraceRecord, 'key_id'>[] = [];
        for (const { index, item } of valid) {
          const until = retained.get(item.request_id);
          // The same words whether the id is another key's or nobody's: the answer reveals neither.
          if (until === undefined || Date.parse(until) <= now) {
            rejected.push({ index, reason: NOT_RETAINED });
            continue;
          }
          records.push({
            request_id: item.request_id,
            question: item.question ?? '',
            outcome: item.outcome,
            observed_at: item.observed_at ? new Date(item.observed_at).toISOString() : null,
            metadata: item.metadata ?? null,
            received_at: receivedAt,
            expires_at: until,
          });
        }
        refuseBeyondQuota(latestTraces(key.id, records), quota);
        const put = await deps.store.traces.putMany(key.id, records, quota);
        if (!put.ok) throw quotaExceeded(quota, put.used);
        return { status: 200, body: { accepted: records.length, rejected: rejected.sort((a, b) => a.index - b.index) } };
      },
    },
  ];
}

const NOT_RETAINED =
  'request_id: not a decision of this API key that is still retained; traces are kept only for decisions made with options.retain: true, until their retention ends';

const quotaContext = (quota: TraceQuota) => ({ limit_type: 'traces_per_key', max_traces: quota.traces, max_bytes: quota.bytes });

/** 413 for a request that no state of the key could admit: alone, it is more than the whole quota. */
function refuseBeyondQuota(records: TraceRecord[], quota: TraceQuota): void {
  const bytes = records.reduce((sum, r) => sum + traceBytes(r), 0);
  if (records.length <= quota.traces && bytes <= quota.bytes) return;
  throw new ApiError(
    'payload_too_large',
    `These ${records.length} traces (${bytes} bytes as JSON) are more than an API key may keep at once (${quota.traces} traces, ${quota.bytes} bytes); send fewer or smaller ones.`,
    { ...quotaContext(quota), request_traces: records.length, request_bytes: bytes },
  );
}

function quotaExceeded(quota: TraceQuota, used: TraceQuota): ApiError {
  return new ApiError(
    'quota_exceeded',
    `This API key keeps ${used.traces} traces (${used.bytes} bytes) of the ${quota.traces} traces and ${quota.bytes} bytes it may keep, and these would pass that; nothing was stored. Traces are removed when their decision's retention ends.`,
    { ...quotaContext(quota), stored_traces: used.traces, stored_bytes: used.bytes },
  );
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

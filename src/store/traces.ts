// Observed outcomes per API key, keyed [key_id, request_id, question] so a re-sent trace replaces
// the earlier one instead of counting twice when outcomes are later joined with decisions.
import type { StoreEnv } from './env.js';
import type { TraceRecord, TraceStore } from './types.js';

export function createTraceStore(env: StoreEnv): TraceStore {
  const { traces } = env.dbs;
  return {
    async putMany(records) {
      if (records.length === 0) return;
      env.root.transactionSync(() => {
        for (const r of records) traces.putSync([r.key_id, r.request_id, r.question], r);
      });
      await env.flushed();
    },
    async list(keyId, opts = {}) {
      const start = opts.requestId === undefined ? [keyId] : [keyId, opts.requestId];
      const end = opts.requestId === undefined ? [keyId, '\uffff'] : [keyId, opts.requestId, '\uffff'];
      return [...traces.getRange({ start, end, limit: opts.limit ?? 1000 })].map((e) => e.value as TraceRecord);
    },
    async *all() {
      for (const { value } of traces.getRange({})) yield value as TraceRecord;
    },
  };
}

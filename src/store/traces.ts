// Observed outcomes per API key, keyed [key_id, request_id, question] so a re-sent trace replaces
// the earlier one instead of counting twice when outcomes are later joined with decisions. What a
// key holds (traces and bytes) is kept beside them and checked against its quota in the same write
// transaction as the traces it admits, so the quota is exact however many workers write at once;
// an expiry index lets the purge remove traces whose decision is no longer retained.
import { latestTraces, TRACE_UPGRADE_GRACE_MS, traceBytes } from './common.js';
import { upgradeOnce, type StoreEnv } from './env.js';
import type { RetainedRecord, TraceQuota, TraceRecord, TraceStore } from './types.js';

export interface TraceStoreInternal extends TraceStore {
  /** Removes traces whose expires_at is before nowMs, at most `limit`; returns how many. */
  purgeExpired(nowMs: number, limit: number): number;
}

export function createTraceStore(env: StoreEnv): TraceStoreInternal {
  const { traces, trace_expiry, trace_usage, retention } = env.dbs;

  // The helpers below run inside a write transaction.
  const usageOf = (keyId: string): TraceQuota => (trace_usage.get(keyId) as TraceQuota | undefined) ?? { traces: 0, bytes: 0 };

  function setUsage(keyId: string, usage: TraceQuota): void {
    if (usage.traces > 0) trace_usage.putSync(keyId, { traces: usage.traces, bytes: Math.max(0, usage.bytes) });
    else trace_usage.removeSync(keyId);
  }

  const expiryKey = (r: TraceRecord) => [Date.parse(r.expires_at), r.key_id, r.request_id, r.question];

  // A data dir from before the quota has traces without an expiry, uncounted: each gets its
  // decision's retention_until (or the grace period when that decision is gone) and is counted.
  upgradeOnce(env, 'trace-expiry', () => {
    const graceUntil = new Date(Date.now() + TRACE_UPGRADE_GRACE_MS).toISOString();
    for (const { key, value } of traces.getRange({})) {
      const old = value as TraceRecord;
      const decision = retention.get([old.key_id, old.request_id]) as RetainedRecord | undefined;
      const record: TraceRecord = { ...old, expires_at: decision?.retention_until ?? graceUntil };
      traces.putSync(key, record);
      trace_expiry.putSync(expiryKey(record), true);
      const usage = usageOf(record.key_id);
      setUsage(record.key_id, { traces: usage.traces + 1, bytes: usage.bytes + traceBytes(record) });
    }
  });

  return {
    async putMany(keyId, input, quota) {
      const records = latestTraces(keyId, input);
      if (records.length === 0) return { ok: true };
      const refused = env.root.transactionSync(() => {
        const used = usageOf(keyId);
        const after = { ...used };
        const olds = records.map((r) => traces.get([keyId, r.request_id, r.question]) as TraceRecord | undefined);
        records.forEach((r, i) => {
          const old = olds[i];
          if (old) after.bytes -= traceBytes(old);
          else after.traces++;
          after.bytes += traceBytes(r);
        });
        if (after.traces > quota.traces || after.bytes > quota.bytes) return { ok: false as const, used, after };
        records.forEach((r, i) => {
          const old = olds[i];
          if (old) trace_expiry.removeSync(expiryKey(old));
          traces.putSync([keyId, r.request_id, r.question], r);
          trace_expiry.putSync(expiryKey(r), true);
        });
        setUsage(keyId, after);
        return null;
      });
      if (refused) return refused;
      await env.flushed();
      return { ok: true };
    },

    async list(keyId, opts = {}) {
      const start = opts.requestId === undefined ? [keyId] : [keyId, opts.requestId];
      const end = opts.requestId === undefined ? [keyId, '\uffff'] : [keyId, opts.requestId, '\uffff'];
      return [...traces.getRange({ start, end, limit: opts.limit ?? 1000 })].map((e) => e.value as TraceRecord);
    },

    async *all() {
      for (const { value } of traces.getRange({})) yield value as TraceRecord;
    },

    purgeExpired(nowMs, limit) {
      return env.root.transactionSync(() => {
        let removed = 0;
        for (const k of [...trace_expiry.getKeys({ limit })]) {
          const [untilMs, keyId, requestId, question] = k as [number, string, string, string];
          if (untilMs >= nowMs) break;
          const record = traces.get([keyId, requestId, question]) as TraceRecord | undefined;
          if (record) {
            traces.removeSync([keyId, requestId, question]);
            const usage = usageOf(keyId);
            setUsage(keyId, { traces: usage.traces - 1, bytes: usage.bytes - traceBytes(record) });
            removed++;
          }
          trace_expiry.removeSync(k);
        }
        return removed;
      });
    },
  };
}

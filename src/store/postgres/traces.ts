// Observed outcomes in PostgreSQL, keyed (key_id, request_id, question): a re-sent trace replaces
// the earlier one. A key's ingests run one at a time under its advisory lock, on every node, and
// check its quota against trace_usage in the transaction that writes; the purge changes the same
// counts by what it deleted, so both stay exact together.
import type pg from 'pg';
import { latestTraces, traceBytes } from '../common.js';
import type { TraceQuota, TraceRecord, TraceStore } from '../types.js';
import { isoOf, transaction } from './db.js';

interface TraceRow {
  key_id: string;
  request_id: string;
  question: string;
  record: TraceRecord;
  expires_at: Date;
}

export interface PgTraceStore extends TraceStore {
  /** Removes traces whose expires_at is before nowMs and uncounts them; returns how many. */
  purgeExpired(db: pg.PoolClient, nowMs: number): Promise<number>;
}

/** Rows per page when `arbitra calibrate` walks every trace. */
const PAGE = 1000;

/** A record stored before traces had an expiry carries it only in its column. */
const recordOf = (row: Pick<TraceRow, 'record' | 'expires_at'>): TraceRecord => ({ ...row.record, expires_at: isoOf(row.expires_at) });

export function createTraceStore(pool: pg.Pool): PgTraceStore {
  return {
    putMany(keyId, input, quota) {
      const records = latestTraces(keyId, input);
      if (records.length === 0) return Promise.resolve({ ok: true });
      const requestIds = records.map((r) => r.request_id);
      const questions = records.map((r) => r.question);
      const bytes = records.map(traceBytes);
      return transaction(
        pool,
        async (client) => {
          // Locked, so a purge deleting one of them meanwhile is waited for and then not counted as replaced.
          const { rows: olds } = await client.query<{ bytes: number }>(
            `select t.bytes from traces t join unnest($2::text[], $3::text[]) as i(request_id, question) using (request_id, question)
             where t.key_id = $1 for update of t`,
            [keyId, requestIds, questions],
          );
          const { rows: usage } = await client.query<{ traces: number; bytes: string }>('select traces, bytes from trace_usage where key_id = $1', [keyId]);
          const used: TraceQuota = { traces: usage[0]?.traces ?? 0, bytes: Number(usage[0]?.bytes ?? 0) };
          const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
          const growth = { traces: records.length - olds.length, bytes: sum(bytes) - sum(olds.map((o) => o.bytes)) };
          const after = { traces: used.traces + growth.traces, bytes: used.bytes + growth.bytes };
          if (after.traces > quota.traces || after.bytes > quota.bytes) return { ok: false as const, used, after };
          await client.query(
            `insert into traces (key_id, request_id, question, record, bytes, expires_at)
             select $1, * from unnest($2::text[], $3::text[], $4::json[], $5::int[], $6::timestamptz[])
             on conflict (key_id, request_id, question) do update set record = excluded.record, bytes = excluded.bytes, expires_at = excluded.expires_at`,
            [keyId, requestIds, questions, records.map((r) => JSON.stringify(r)), bytes, records.map((r) => new Date(r.expires_at))],
          );
          await client.query(
            `insert into trace_usage (key_id, traces, bytes) values ($1, $2, $3)
             on conflict (key_id) do update set traces = trace_usage.traces + excluded.traces, bytes = trace_usage.bytes + excluded.bytes`,
            [keyId, growth.traces, growth.bytes],
          );
          return { ok: true as const };
        },
        `traces:${keyId}`,
      );
    },

    async list(keyId, opts = {}) {
      const { rows } = await pool.query<TraceRow>(
        `select record, expires_at from traces where key_id = $1 and ($2::text is null or request_id = $2)
         order by request_id collate "C", question collate "C" limit $3`,
        [keyId, opts.requestId ?? null, opts.limit ?? 1000],
      );
      return rows.map(recordOf);
    },

    async *all() {
      // Keyset pages, so a walk over many traces never holds them all or a long transaction.
      let after: [string, string, string] | null = null;
      for (;;) {
        const { rows } = await pool.query<TraceRow>(
          `select key_id, request_id, question, record, expires_at from traces
           where $1::text is null or (key_id collate "C", request_id collate "C", question collate "C") > ($1, $2, $3)
           order by key_id collate "C", request_id collate "C", question collate "C" limit $4`,
          [after?.[0] ?? null, after?.[1] ?? null, after?.[2] ?? null, PAGE],
        );
        for (const r of rows) yield recordOf(r);
        if (rows.length < PAGE) return;
        const last: TraceRow = rows.at(-1)!;
        after = [last.key_id, last.request_id, last.question];
      }
    },

    async purgeExpired(db, nowMs) {
      const { rows } = await db.query<{ n: number }>(
        `with gone as (delete from traces where expires_at < $1 returning key_id, bytes),
         per_key as (select key_id, count(*)::int as n, sum(bytes)::bigint as bytes from gone group by key_id),
         counted as (update trace_usage u set traces = u.traces - p.n, bytes = u.bytes - p.bytes from per_key p where u.key_id = p.key_id)
         select count(*)::int as n from gone`,
        [new Date(nowMs)],
      );
      return rows[0]!.n;
    },
  };
}

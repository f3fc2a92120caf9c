// Observed outcomes in PostgreSQL, keyed (key_id, request_id, question): a re-sent trace replaces
// the earlier one.
import type pg from 'pg';
import type { TraceRecord, TraceStore } from '../types.js';
import { transaction } from './db.js';

interface TraceRow {
  key_id: string;
  request_id: string;
  question: string;
  record: TraceRecord;
}

/** Rows per page when `arbitra calibrate` walks every trace. */
const PAGE = 1000;

export function createTraceStore(pool: pg.Pool): TraceStore {
  return {
    async putMany(records) {
      if (records.length === 0) return;
      await transaction(pool, async (client) => {
        for (const r of records) {
          await client.query(
            `insert into traces (key_id, request_id, question, record) values ($1, $2, $3, $4)
             on conflict (key_id, request_id, question) do update set record = excluded.record`,
            [r.key_id, r.request_id, r.question, JSON.stringify(r)],
          );
        }
      });
    },

    async list(keyId, opts = {}) {
      const { rows } = await pool.query<{ record: TraceRecord }>(
        `select record from traces where key_id = $1 and ($2::text is null or request_id = $2)
         order by request_id collate "C", question collate "C" limit $3`,
        [keyId, opts.requestId ?? null, opts.limit ?? 1000],
      );
      return rows.map((r) => r.record);
    },

    async *all() {
      // Keyset pages, so a walk over many traces never holds them all or a long transaction.
      let after: [string, string, string] | null = null;
      for (;;) {
        const { rows } = await pool.query<TraceRow>(
          `select key_id, request_id, question, record from traces
           where $1::text is null or (key_id collate "C", request_id collate "C", question collate "C") > ($1, $2, $3)
           order by key_id collate "C", request_id collate "C", question collate "C" limit $4`,
          [after?.[0] ?? null, after?.[1] ?? null, after?.[2] ?? null, PAGE],
        );
        for (const r of rows) yield r.record;
        if (rows.length < PAGE) return;
        const last: TraceRow = rows.at(-1)!;
        after = [last.key_id, last.request_id, last.question];
      }
    },
  };
}

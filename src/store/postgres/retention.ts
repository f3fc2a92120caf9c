// Retained requests in PostgreSQL, kept under (key_id, id) until retention_until.
import type pg from 'pg';
import { pseudonymOf } from '../common.js';
import type { Hasher } from '../secret.js';
import type { RetainedRecord, RetentionStore } from '../types.js';
import { isoOf } from './db.js';

export interface PgRetentionStore extends RetentionStore {
  /** Removes records whose retention_until is before nowMs; returns how many. */
  purgeExpired(db: pg.PoolClient, nowMs: number): Promise<number>;
}

export function createRetentionStore(pool: pg.Pool, hash: Hasher): PgRetentionStore {
  return {
    async put(record) {
      const untilMs = Date.parse(record.retention_until);
      if (!Number.isFinite(untilMs)) throw new Error('retention_until must be an ISO timestamp');
      await pool.query(
        `insert into retained_requests (key_id, id, record, retention_until) values ($1, $2, $3, $4)
         on conflict (key_id, id) do update set record = excluded.record, retention_until = excluded.retention_until`,
        [record.key_id, record.id, JSON.stringify(record), new Date(untilMs)],
      );
    },

    async get(keyId, id) {
      const { rows } = await pool.query<{ record: RetainedRecord }>('select record from retained_requests where key_id = $1 and id = $2', [keyId, id]);
      return rows[0]?.record ?? null;
    },

    async delete(keyId, id) {
      return ((await pool.query('delete from retained_requests where key_id = $1 and id = $2', [keyId, id])).rowCount ?? 0) > 0;
    },

    async retainedUntil(keyId, ids) {
      const { rows } = await pool.query<{ id: string; retention_until: Date }>(
        'select id, retention_until from retained_requests where key_id = $1 and id = any($2::text[])',
        [keyId, ids],
      );
      return new Map(rows.map((r) => [r.id, isoOf(r.retention_until)]));
    },

    pseudonym: (keyId) => pseudonymOf(hash, keyId),

    async purgeExpired(db, nowMs) {
      return (await db.query('delete from retained_requests where retention_until < $1', [new Date(nowMs)])).rowCount ?? 0;
    },
  };
}

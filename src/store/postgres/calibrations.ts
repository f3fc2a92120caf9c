// Fitted calibrations in PostgreSQL, versioned per model and layout; n is counted under an advisory
// lock per model and layout, so two nodes fitting at once get consecutive versions.
import type pg from 'pg';
import { calibrationVersion } from '../common.js';
import type { CalibrationRecord, CalibrationStore } from '../types.js';
import { transaction } from './db.js';

export function createCalibrationStore(pool: pg.Pool): CalibrationStore {
  return {
    add<T extends CalibrationRecord>(record: Omit<T, 'version'>) {
      return transaction(
        pool,
        async (client) => {
          const { rows } = await client.query<{ n: number }>('select coalesce(max(n), 0) + 1 as n from calibrations where model_sha256 = $1 and layout = $2', [
            record.model_sha256,
            record.layout,
          ]);
          const n = rows[0]!.n;
          const full = { ...record, version: calibrationVersion(record, n) } as T;
          await client.query('insert into calibrations (model_sha256, layout, n, record) values ($1, $2, $3, $4)', [
            record.model_sha256,
            record.layout,
            n,
            JSON.stringify(full),
          ]);
          return full;
        },
        `calibration:${record.model_sha256}:${record.layout}`,
      );
    },

    async latest<T extends CalibrationRecord>(sha: string, layout: string) {
      const { rows } = await pool.query<{ record: T }>('select record from calibrations where model_sha256 = $1 and layout = $2 order by n desc limit 1', [
        sha,
        layout,
      ]);
      return rows[0]?.record ?? null;
    },
  };
}

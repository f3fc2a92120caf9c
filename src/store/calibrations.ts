// Fitted calibrations, versioned: every fit is kept under [model_sha256, layout, n] (n counting up
// from 1 per model and layout), and the newest one is the one served. Nothing is ever overwritten,
// so a served version can always be looked up again.
import { calibrationVersion } from './common.js';
import type { StoreEnv } from './env.js';
import type { CalibrationRecord, CalibrationStore } from './types.js';

export function createCalibrationStore(env: StoreEnv): CalibrationStore {
  const { calibrations } = env.dbs;
  /** The newest entry under [sha, layout, n]: its key carries n. */
  const newest = (sha: string, layout: string) =>
    [...calibrations.getRange({ start: [sha, layout, Infinity], end: [sha, layout, 0], reverse: true, limit: 1 })][0];
  return {
    async add<T extends CalibrationRecord>(record: Omit<T, 'version'>) {
      const stored = env.root.transactionSync(() => {
        const last = newest(record.model_sha256, record.layout);
        const n = last ? (last.key as [string, string, number])[2] + 1 : 1;
        const full = { ...record, version: calibrationVersion(record, n) };
        calibrations.putSync([record.model_sha256, record.layout, n], full);
        return full as T;
      });
      await env.flushed();
      return stored;
    },
    latest: async <T extends CalibrationRecord>(sha: string, layout: string) => (newest(sha, layout)?.value as T | undefined) ?? null,
  };
}

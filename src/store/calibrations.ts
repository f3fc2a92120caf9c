// Fitted calibrations, versioned: every fit is kept under [model_sha256, layout, n] (n counting up
// from 1 per model and layout), and the newest one is the one served. Nothing is ever overwritten,
// so a served version can always be looked up again.
// The record's content is the decision layer's (src/decision/calibration.ts); the store keys it.
import type { StoreEnv } from './env.js';

/** What the store needs of a calibration record. */
export interface CalibrationRecord {
  version: string;
  model_sha256: string;
  layout: string;
}

export interface CalibrationStore {
  /** Stores a new version for the record's model and layout; returns the record with its version set. */
  add<T extends CalibrationRecord>(record: Omit<T, 'version'>): Promise<T>;
  /** The newest calibration for this model and layout; null when none was fitted. */
  latest<T extends CalibrationRecord>(modelSha256: string, layout: string): T | null;
  list<T extends CalibrationRecord>(modelSha256: string, layout: string): T[];
}

export function createCalibrationStore(env: StoreEnv): CalibrationStore {
  const { calibrations } = env.dbs;
  const range = (sha: string, layout: string, reverse: boolean, limit?: number) =>
    [...calibrations.getRange({ start: reverse ? [sha, layout, Infinity] : [sha, layout, 0], end: reverse ? [sha, layout, 0] : [sha, layout, Infinity], reverse, limit })].map(
      (e) => e.value as CalibrationRecord,
    );
  return {
    async add<T extends CalibrationRecord>(record: Omit<T, 'version'>) {
      const stored = env.root.transactionSync(() => {
        const newest = range(record.model_sha256, record.layout, true, 1)[0];
        const n = newest ? Number(newest.version.split('.').at(-1)) + 1 : 1;
        // The version names the layout and the model it belongs to, and counts up.
        const full = { ...record, version: `${record.layout}.${record.model_sha256.slice(0, 8)}.${n}` };
        calibrations.putSync([record.model_sha256, record.layout, n], full);
        return full as T;
      });
      await env.flushed();
      return stored;
    },
    latest: <T extends CalibrationRecord>(sha: string, layout: string) => (range(sha, layout, true, 1)[0] as T | undefined) ?? null,
    list: <T extends CalibrationRecord>(sha: string, layout: string) => range(sha, layout, false) as T[],
  };
}

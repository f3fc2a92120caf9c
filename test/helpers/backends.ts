// The store backends a test runs against: LMDB always, PostgreSQL where its binaries run here (a
// server per test file, a fresh database per store). A test written over `backendsFor(t)` proves the
// same contract of both. ARBITRA_TEST_BACKENDS=lmdb (`npm run test:fast`) leaves PostgreSQL out.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import type { StoreOptions } from '../../src/store/index.js';
import { postgresFor } from './postgres.js';

/** The shared server secret every PostgreSQL node needs (ARBITRA_KEY_SECRET). */
export const TEST_KEY_SECRET = 'test-only-server-secret-0123456789abcdef';

export interface Backend {
  name: 'lmdb' | 'postgres';
  /** A new, empty place for a store: a data dir, or a fresh database's URL. */
  fresh: () => Promise<string>;
  /** What every store of this backend is opened with. */
  options: StoreOptions;
}

export async function backendsFor(t: Test): Promise<Backend[]> {
  const dirs: string[] = [];
  t.teardown(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
  const lmdb: Backend = {
    name: 'lmdb',
    fresh: async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-store-'));
      dirs.push(dir);
      return dir;
    },
    options: {},
  };
  if (process.env.ARBITRA_TEST_BACKENDS === 'lmdb') return [lmdb];
  const server = await postgresFor(t);
  if (!server) return [lmdb];
  return [lmdb, { name: 'postgres', fresh: () => server.freshDatabase(), options: { keySecret: TEST_KEY_SECRET } }];
}

// `arbitra calibrate` reads its samples from the store in the order the decisions were made, so the
// folds of its cross-validation, and with them its held-out figures and whether it saves a fit, are
// the same on every run: the store's own order follows random request ids.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { samplesFromStore } from '../../src/cli/calibrate.js';
import { LAYOUT_VERSION } from '../../src/decision/prompt.js';
import { openStore } from '../../src/store/index.js';

t.test('samples follow the decisions’ creation times, not the ids they are stored under', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-calibrate-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = await openStore(dir);
  t.teardown(() => store.close());
  // Ids that sort against time: z… was decided first, a… last.
  const ids = ['so_zz', 'so_mm', 'so_aa'];
  for (const [i, id] of ids.entries()) {
    const p = [0.1 + 0.3 * i, 0.9 - 0.3 * i];
    await store.retention.put({
      id,
      key_id: 'key_1',
      request: {},
      response: { answers: { team: { type: 'choice', probabilities: { billing: p[0], support: p[1] } } } },
      decision: { model_sha256: 'sha', layout: LAYOUT_VERSION, questions: { team: { kind: 'choice', p } } },
      created_at: new Date(Date.UTC(2026, 10, 26, 12, 0, i)).toISOString(),
      retention_until: new Date(Date.UTC(2027, 0, 1)).toISOString(),
    });
  }
  const base = {
    question: 'team',
    outcome: 'billing',
    observed_at: null,
    metadata: null,
    received_at: new Date().toISOString(),
    expires_at: new Date(Date.UTC(2027, 0, 1)).toISOString(),
  };
  await store.traces.putMany(
    'key_1',
    [...ids].reverse().map((request_id) => ({ ...base, request_id })),
    { traces: 10, bytes: 1e6 },
  );

  const { samples, skipped } = await samplesFromStore(store, 'sha');
  t.equal(skipped, 0);
  t.same(
    samples.map((s) => Math.round(s.p[0]! * 10)),
    [1, 4, 7],
    'in the order the decisions were made',
  );
});

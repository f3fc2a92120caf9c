// Bounded answers before admission, on the real server and both HTTP fronts: each of
// bench/lib/hostile-cases.ts (issue 50's two requests, gzipped as given, and the worst cases found
// since) is answered with its status, in under 1 MiB, with no reset, and the server answers a
// decision afterwards. How much CPU each costs is bench:hostile's to measure.
import t from 'tap';
import { hostileCases } from '../../bench/lib/hostile-cases.js';
import { sendThenRead } from '../../bench/lib/raw-http.js';
import { cannotRun, startServer } from '../integration/helpers/server.js';

const MiB = 1024 * 1024;
// Far beyond what any case takes now (a few seconds at most on a loaded machine), and far below the minutes some took.
const TIMEOUT_MS = 60_000;

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  const cases = hostileCases();
  for (const front of ['uws', 'node'] as const) {
    t.test(`HTTP front ${front}`, async (t) => {
      const server = await startServer(t.testdir(), { workers: 1, env: front === 'node' ? { ARBITRA_HTTP: 'node' } : {} });
      t.teardown(() => server.stop());
      const { secret } = await server.createKey(`hostile-${front}@example.com`);
      for (const { name, request, keyed, expected } of cases) {
        const headers = { ...request.headers, ...(keyed ? { authorization: `Bearer ${secret}` } : {}) };
        const reply = await sendThenRead(server.port, { ...request, headers, timeoutMs: TIMEOUT_MS });
        t.equal(reply.error, null, `${name}: answered`);
        t.equal(reply.status, expected, `${name}: ${expected}`);
        t.ok(reply.complete && reply.bodyBytes < MiB, `${name}: ${reply.bodyBytes} bytes`);
        if (reply.status !== null && reply.status >= 400) t.ok(JSON.parse(reply.body).detail, `${name}: in the documented shape`);
      }
      const after = await server.call('/v1/systemone', {
        key: secret,
        body: { state: 'The invoice was paid twice.', questions: { q: { instructions: 'Is this about money?' } } },
      });
      t.equal(after.status, 200, 'a decision is answered afterwards');
    });
  }
}

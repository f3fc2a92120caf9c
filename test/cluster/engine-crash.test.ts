// The engine process is killed under a running server: decisions answer 503 service_unavailable
// with retry headers (never a 500, never a hang) until the host has restarted it, then work again.
import t from 'tap';
import { cannotRun, startServer } from '../integration/helpers/server.js';
import { serveChildren } from './processes.js';

const BODY = { state: 'The invoice was paid twice.', questions: { q: { instructions: 'Is this about money?' } } };

/** The engine process: the child of the primary running src/engine/process-main.js. */
function enginePid(primary: number): number | null {
  return serveChildren(primary).find((c) => c.engine)?.pid ?? null;
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  const server = await startServer(t.testdir(), { workers: 1 });
  t.teardown(() => server.stop());
  const { secret } = await server.createKey('ops@example.com');

  t.test('a killed engine is a 503 with retry hints until it is back', async (t) => {
    const before = await server.call('/v1/systemone', { body: BODY, key: secret });
    t.equal(before.status, 200, 'decisions work before the crash');

    const pid = enginePid(server.pid);
    t.ok(pid, 'the engine runs in its own process, a child of the primary');
    process.kill(pid!, 'SIGKILL');

    let unavailable: Awaited<ReturnType<typeof server.call>> | null = null;
    let recovered = false;
    const statuses = new Set<number>();
    const until = Date.now() + 60_000;
    while (Date.now() < until) {
      const r = await server.call('/v1/systemone', { body: BODY, key: secret });
      statuses.add(r.status);
      if (r.status === 503 && !unavailable) unavailable = r;
      if (r.status === 200 && unavailable) {
        recovered = true;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.ok(unavailable, 'requests during the restart get a 503');
    t.equal(unavailable?.json?.detail?.error_type, 'service_unavailable');
    t.match(unavailable?.json?.detail?.message, /engine|model/, 'the message says what is wrong');
    t.ok(Number(unavailable?.headers.get('retry-after')) >= 1, 'Retry-After is set');
    t.ok(Number(unavailable?.headers.get('retry-after-ms')) >= 1, 'retry-after-ms is set');
    t.same([...statuses].filter((s) => s !== 200 && s !== 503), [], 'nothing but 200 and 503 (no 500, no hang)');
    t.ok(recovered, 'decisions work again once the engine is back');
    const newPid = enginePid(server.pid);
    t.ok(newPid && newPid !== pid, 'a new engine process replaced the killed one');
    const health = await server.call('/health');
    t.equal(health.status, 200, '/health is ok again');
  });
}

// The engine process is killed under a running server: decisions answer 503 service_unavailable
// with retry headers (never a 500, never a hang) until the host has restarted it, then work again.
// An engine that served and then died is restarted at once, every time; one that dies before it
// serves (its model file gone, say) is a crash loop and backs off, doubling.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { cannotRun, metricValue, MODEL_FILE, startServer, until, type Server } from '../integration/helpers/server.js';
import { serveChildren } from './processes.js';

const BODY = { state: 'The invoice was paid twice.', questions: { q: { instructions: 'Is this about money?' } } };

/** The engine process: the child of the primary running src/engine/process-main.js. */
function enginePid(primary: number): number | null {
  return serveChildren(primary).find((c) => c.engine)?.pid ?? null;
}

/**
 * Has the primary read the engine's counters since the last decision: it learns that the engine
 * served from any look at them, and a scrape of /metrics is one. (Waiting for the watchdog's look
 * each second instead, a primary slowed by a neighbouring test missed it and backed off.)
 */
function primaryReadsCounters(server: Server): Promise<boolean> {
  return until(async () => metricValue((await server.call('/metrics')).text, 'arbitra_engine_decodes_total', { engine: '0' }) !== null, 10_000, 100);
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  // A copy of the model, so that it can be taken away from under the engine.
  const dir = t.testdir();
  const model = path.join(dir, path.basename(MODEL_FILE));
  fs.copyFileSync(MODEL_FILE, model);
  const server = await startServer(dir, { workers: 1, args: ['--model', model] });
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
    t.same(
      [...statuses].filter((s) => s !== 200 && s !== 503),
      [],
      'nothing but 200 and 503 (no 500, no hang)',
    );
    t.ok(recovered, 'decisions work again once the engine is back');
    const newPid = enginePid(server.pid);
    t.ok(newPid && newPid !== pid, 'a new engine process replaced the killed one');
    const health = await server.call('/health');
    t.equal(health.status, 200, '/health is ok again');
  });

  t.test('an engine killed after serving is restarted at once, every time', async (t) => {
    const restarts: string[] = [];
    // Twice is enough to tell "at once, every time" from a back-off, which would double the second.
    for (let i = 0; i < 2; i++) {
      t.equal((await server.call('/v1/systemone', { body: BODY, key: secret })).status, 200, `decision ${i} served`);
      t.ok(await primaryReadsCounters(server), 'the primary has read the counters since');
      const logged = server.log().length;
      process.kill(enginePid(server.pid)!, 'SIGKILL');
      let back = false;
      for (const end = Date.now() + 60_000; !back && Date.now() < end; ) {
        back = (await server.call('/v1/systemone', { body: BODY, key: secret })).status === 200;
        if (!back) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      t.ok(back, `back after kill ${i + 1}`);
      restarts.push(/restarting in (\d+) ms/.exec(server.log().slice(logged))?.[1] ?? '?');
    }
    t.same(restarts, ['500', '500'], 'each restart after 500 ms, no back-off');
  });

  t.test('an engine that dies before serving backs off, doubling', async (t) => {
    t.equal((await server.call('/v1/systemone', { body: BODY, key: secret })).status, 200, 'it serves before it is killed');
    t.ok(await primaryReadsCounters(server), 'the primary has read the counters since');
    const logged = server.log().length;
    fs.renameSync(model, `${model}.away`);
    process.kill(enginePid(server.pid)!, 'SIGKILL');
    let delays: string[] = [];
    for (const end = Date.now() + 30_000; delays.length < 3 && Date.now() < end; ) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      delays = [
        ...server
          .log()
          .slice(logged)
          .matchAll(/engine 0 process exited \([^)]*\); restarting in (\d+) ms/g),
      ].map((m) => m[1]!);
    }
    t.same(delays.slice(0, 3), ['500', '1000', '2000'], 'restarts back off while the engine cannot load');
    const health = await server.call('/health');
    t.equal(health.status, 503, '/health says so meanwhile');
    fs.renameSync(`${model}.away`, model);
    let back = false;
    for (const end = Date.now() + 60_000; !back && Date.now() < end; ) {
      back = (await server.call('/v1/systemone', { body: BODY, key: secret })).status === 200;
      if (!back) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    t.ok(back, 'decisions work again once the model is back');
  });
}

// Kills under load, at a size CI affords (`npm run bench:chaos` runs the long version on the
// default model): one API key's clients send one identical body without pause (its state stays
// cached) and fresh states with two questions, while an HTTP worker, the engine or both are killed
// with SIGKILL, again and again, cold (the engine's cache lost) and warm. After every kill a
// decision with a new state of that same key must succeed within 45 s (bench:chaos's goal), or
// within twice this server's own cold start where the machine is so loaded that a start alone
// takes longer (a heal is mostly an engine's reload); and every request must be answered: a status,
// never silence (a lost connection only for requests the killed worker held). This is the load
// under which a key's new states once waited forever behind its cached ones.
import t from 'tap';
import { isSilence, ONE_KEY_MIX, runChaos, type KillTarget } from '../../bench/lib/chaos.js';
import { cannotRun, startServer } from '../integration/helpers/server.js';

const DEADLINE_S = 20;
const HEAL_GOAL_MS = 45_000;
// Each kind once, and a worker again beside an engine that was restarted cold (60 kills: bench:chaos).
const KILLS: KillTarget[] = ['worker', 'engine', 'both', 'worker'];
/**
 * Statuses a request may end with under kills: answered, refused while the engine reloads, past
 * its deadline, or turned away by admission when the queue would make it miss its deadline.
 */
const ANSWERS = new Set(['200', '429', '503', '504']);
/** A killed worker takes the connections it was answering with it. */
const LOST = new Set(['ECONNRESET', 'EPIPE', 'socket hang up']);

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  const starting = Date.now();
  const server = await startServer(t.testdir(), { workers: 2, env: { ARBITRA_REQUEST_DEADLINE_SECONDS: String(DEADLINE_S) } });
  const coldStartMs = Date.now() - starting;
  t.teardown(() => server.stop());
  const healWithinMs = Math.max(HEAL_GOAL_MS, 2 * coldStartMs);
  const load = await server.createKey('chaos@example.com');
  const other = await server.createKey('chaos-other@example.com');

  t.test(`${KILLS.length} kills under identical and fresh bodies of one key: every request answered, every kill healed`, async (t) => {
    const report = await runChaos({
      url: server.url,
      primary: server.pid,
      keys: { load: load.secret, other: other.secret },
      clients: ONE_KEY_MIX,
      kills: KILLS,
      settleMs: 3_000,
      answerWithinMs: (DEADLINE_S + 15) * 1000,
      healWithinMs,
      log: (line) => t.comment(line),
    });
    t.equal(report.kills.length, KILLS.length);
    t.comment(`heal window ${(healWithinMs / 1000).toFixed(1)} s (the server's cold start took ${(coldStartMs / 1000).toFixed(1)} s)`);
    for (const [i, k] of report.kills.entries()) {
      t.ok(k.pids.length > 0, `kill ${i + 1} (${k.target}) found its victims`);
      t.ok(
        k.healedMs !== null,
        `kill ${i + 1} (${k.target}): a new state of the load key was decided ${k.healedMs === null ? 'never' : `after ${(k.healedMs / 1000).toFixed(1)} s`}`,
      );
    }
    t.same(report.silent, [], 'no request went unanswered');
    const odd = report.requests.filter((r) => !ANSWERS.has(r.outcome) && !LOST.has(r.outcome) && !isSilence(r));
    t.same(
      odd.map((r) => `${r.kind} ${r.outcome}: ${r.detail}`),
      [],
      'nothing but 200, 429, 503 and 504, or a connection the killed worker held',
    );
    const lost = report.requests.filter((r) => LOST.has(r.outcome)).length;
    const workerKills = report.kills.filter((k) => k.target !== 'engine').length;
    t.ok(lost <= workerKills * 6, `connections were lost only with a killed worker (${lost} over ${workerKills} worker kills)`);
    const fresh = report.requests.filter((r) => r.kind === 'distinct' && r.key === 'load' && r.outcome === '200').length;
    t.ok(fresh > KILLS.length, `the load key's new states were decided all along (${fresh})`);
    t.comment(`before the kills: ${JSON.stringify(report.beforeKills)}; per kill: ${report.kills.map((k) => JSON.stringify(k.outcomes)).join(' ')}`);
  });
}

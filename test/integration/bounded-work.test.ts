// Bounded work per request against arbitra serve: the question and branch caps answer a 422 that
// names them (defaults and overrides), a decision past the deadline is cancelled and answered 504,
// and a client that disconnects has its work dropped from the engine (counted in /metrics); the
// server keeps answering afterwards.
import http from 'node:http';
import t from 'tap';
import { cannotRun, metricValue, startServer, until, type Server } from './helpers/server.js';

const SMALL = { state: 'The invoice was paid twice.', questions: { q: { instructions: 'Is this about money?' } } };

function questions(count: number): Record<string, { instructions: string }> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`q${i}`, { instructions: `Does the text mention item number ${i}?` }]));
}

async function cancelledJobs(server: Server): Promise<number> {
  const metrics = await server.call('/metrics');
  return metricValue(metrics.text, 'arbitra_engine_jobs_cancelled_total') ?? 0;
}

/** The cancelled-jobs counter once it reaches `count` (the engine drops a job at its next batch), or its value after 10 s. */
async function cancelledReaching(server: Server, count: number): Promise<number> {
  let seen = await cancelledJobs(server);
  for (let i = 0; i < 100 && seen < count; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    seen = await cancelledJobs(server);
  }
  return seen;
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  t.test('default caps: 100 questions and 800 branches per request', async (t) => {
    const server = await startServer(t.testdir(), { workers: 1, lanes: 'default' });
    t.teardown(() => server.stop());
    const { secret } = await server.createKey('caps@example.com');
    const r = await server.call('/v1/systemone', { key: secret, body: { state: 'x', questions: questions(101) } });
    t.equal(r.status, 422, '101 questions are refused');
    t.same(r.json.detail[0].loc, ['body', 'questions']);
    t.equal(r.json.detail[0].type, 'too_long');
    t.match(r.json.detail[0].msg, /101 questions.*at most 100.*ARBITRA_MAX_QUESTIONS/, 'the message names the cap and its variable');
    t.equal(r.json.detail[0].ctx.max_length, 100);
    t.equal(r.json.detail.length, 1, '101 × 1 pass is within the branch cap');
  });

  t.test('caps set by the operator; the branch cap counts questions × passes', async (t) => {
    const server = await startServer(t.testdir(), { workers: 1, env: { ARBITRA_MAX_QUESTIONS: '3', ARBITRA_MAX_BRANCHES: '8' } });
    t.teardown(() => server.stop());
    const { secret } = await server.createKey('caps@example.com');
    const four = await server.call('/v1/systemone', { key: secret, body: { state: 'x', questions: questions(4) } });
    t.equal(four.status, 422);
    t.match(four.json.detail[0].msg, /at most 3/);
    const passes = await server.call('/v1/systemone', {
      key: secret,
      body: { state: 'x', questions: questions(3), options: { debias: 'permute', debias_passes: 4 } },
    });
    t.equal(passes.status, 422, '3 questions × 4 passes = 12 branches is over 8');
    t.match(passes.json.detail[0].msg, /12 scored branches \(3 questions × 4 passes\).*at most 8.*ARBITRA_MAX_BRANCHES/);
    const fits = await server.call('/v1/systemone', {
      key: secret,
      body: { state: 'x', questions: questions(2), options: { debias: 'permute', debias_passes: 4 } },
    });
    t.equal(fits.status, 200, '2 × 4 = 8 branches is allowed');
  });

  t.test('a decision past the deadline is cancelled and answered 504; a client that leaves is cancelled too', async (t) => {
    // Admission by cost would refuse this work at once (test/integration/admission.test.ts); off, the deadline cancels it.
    const server = await startServer(t.testdir(), {
      workers: 1,
      env: { ARBITRA_REQUEST_DEADLINE_SECONDS: '3', ARBITRA_MAX_QUESTIONS: '0', ARBITRA_MAX_BRANCHES: '0', ARBITRA_ADMISSION: 'off' },
    });
    t.teardown(() => server.stop());
    const { secret } = await server.createKey('deadline@example.com');
    const before = await cancelledJobs(server);

    // 1,000 questions take far longer than three seconds on CPU (about 9 s here); one takes far less.
    // (400 took about 3.5 s here: a faster machine would have answered them.)
    const late = await server.call('/v1/systemone', { key: secret, body: { state: 'A long list follows.', questions: questions(1000) } });
    t.equal(late.status, 504);
    t.equal(late.json?.detail?.error_type, 'deadline_exceeded');
    t.match(late.json?.detail?.message, /deadline of 3 s.*ARBITRA_REQUEST_DEADLINE_SECONDS/);
    t.equal(late.json?.detail?.deadline_seconds, 3);
    t.equal(await cancelledReaching(server, before + 1), before + 1, 'the engine dropped the job');

    // The same request from a client that hangs up once the engine holds its job, long before the
    // deadline would cancel it. (After a fixed 200 ms instead, a slowed server had not yet handed
    // the job to the engine, and the worker dropped it before the engine counted it.)
    const body = JSON.stringify({ state: 'Another long list follows.', questions: questions(1000) });
    const req = http.request(`${server.url}/v1/systemone`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => {});
    req.end(body);
    const queued = await until(async () => (metricValue((await server.call('/metrics')).text, 'arbitra_engine_queue_depth') ?? 0) > 0, 2_000, 20);
    req.destroy();
    t.ok(queued, 'the engine held the job when the client hung up');
    t.equal(await cancelledReaching(server, before + 2), before + 2, 'the abandoned request was dropped from the engine');

    const after = await server.call('/v1/systemone', { key: secret, body: SMALL });
    t.equal(after.status, 200, 'the server answers the next decision');
  });
}

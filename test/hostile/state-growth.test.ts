// Nothing an anonymous caller sends grows the server's state, and no key grows it past its quota or
// at another key's expense, held on the real server with two workers on both HTTP fronts:
// /metrics (the primary's aggregate over the workers) keeps its series whatever methods and paths
// are sent; a key stores no more traces than its quota, and none for another key's decision; a
// second waitlist sign-up for an email changes nothing; one key's idempotency entries never evict
// another's.
import t from 'tap';
import { cannotRun, startServer, type Server } from '../integration/helpers/server.js';

const TRACES_MAX = 5;
const IDEMPOTENCY_MAX = 2;
const CHEAP = { state: 'My invoice is wrong.', questions: { q: { instructions: 'Is this about billing?' } } };

/** The series of a Prometheus exposition: each sample's line without its value. */
function series(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => line.replace(/ \S+$/, ''))
    .sort();
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  for (const front of ['uws', 'node'] as const) {
    t.test(`${front} front`, async (t) => {
      const server: Server = await startServer(t.testdir(), {
        workers: 2,
        env: {
          ...(front === 'node' ? { ARBITRA_HTTP: 'node' } : {}),
          ARBITRA_TRACES_MAX: String(TRACES_MAX),
          ARBITRA_IDEMPOTENCY_MAX: String(IDEMPOTENCY_MAX),
        },
      });
      t.teardown(() => server.stop());
      const store = await server.openStore();
      t.teardown(() => store.close());
      const a = await server.createKey('a@example.com');
      const b = await server.createKey('b@example.com');
      // Before any subtest starts, so nothing but what a subtest sends runs while it measures.
      const decision = await server.call('/v1/systemone', { key: a.secret, body: { ...CHEAP, options: { retain: true } } });
      t.equal(decision.status, 200, decision.status === 200 ? "a retained decision of A's" : decision.text.slice(0, 300));
      const decisionId: string = decision.json.id;
      const trace = (question: string) => ({ request_id: decisionId, question, outcome: true });

      t.test('300 invented methods on unknown paths leave the series of /metrics as they were', async (t) => {
        // Invented tokens, and the WebDAV methods node:http's parser takes; new connections, so both workers see them.
        const methods = Array.from({ length: 270 }, (_, i) => `BREW${i}`).concat(
          ['PROPFIND', 'PROPPATCH', 'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'SEARCH', 'REPORT', 'MKACTIVITY'].flatMap((m) => [m, m, m]),
        );
        const send = (method: string, i: number) => server.call(`/probe-${i}`, { method, fresh: true }).catch(() => null);
        // Every label a refused method can reach exists once before the baseline is taken.
        await Promise.all([send('BREW-first', 0), send('PROPFIND', 1), server.call('/metrics'), server.call('/metrics', { fresh: true })]);
        const before = await server.call('/metrics');
        t.equal(before.status, 200);
        for (let i = 0; i < methods.length; i += 30) await Promise.all(methods.slice(i, i + 30).map((m, j) => send(m, i + j)));
        const after = await server.call('/metrics');
        t.same(series(after.text), series(before.text), `the same ${series(before.text).length} series`);
        t.ok(after.text.length < before.text.length + 1024, `${before.text.length} → ${after.text.length} bytes: only counts changed`);
        t.notMatch(after.text, /BREW|PROPFIND|probe-/, 'no method or path a client invented is a label');
      });

      t.test("traces for another key's decision are refused, item by item", async (t) => {
        const res = await server.call('/v1/traces', { key: b.secret, body: [trace('q'), { request_id: 'so_invented', outcome: true }] });
        t.equal(res.status, 200);
        t.equal(res.json.accepted, 0);
        t.same(
          res.json.rejected.map((r: { index: number }) => r.index),
          [0, 1],
        );
        t.equal(res.json.rejected[0].reason, res.json.rejected[1].reason, "another key's decision reads as no decision");
        t.same(await store.traces.list(b.id), [], 'nothing stored for the key that sent them');
      });

      t.test('one key stores no more traces than its quota', async (t) => {
        const first = await server.call('/v1/traces', { key: a.secret, body: [0, 1, 2, 3].map((i) => trace(`q${i}`)) });
        t.same(first.json, { accepted: 4, rejected: [] });
        const over = await server.call('/v1/traces', { key: a.secret, body: [4, 5].map((i) => trace(`q${i}`)) });
        t.equal(over.status, 429);
        t.match(over.json.detail, { error_type: 'quota_exceeded', max_traces: TRACES_MAX, stored_traces: 4 });
        const whole = await server.call('/v1/traces', { key: a.secret, body: [0, 1, 2, 3, 4, 5].map((i) => trace(`r${i}`)) });
        t.equal(whole.status, 413, 'more than the whole quota at once');
        t.same((await server.call('/v1/traces', { key: a.secret, body: trace('q4') })).json, { accepted: 1, rejected: [] }, 'the last one fits');
        const refused = await Promise.all([5, 6, 7].map((i) => server.call('/v1/traces', { key: a.secret, body: trace(`q${i}`), fresh: true })));
        t.same(
          refused.map((r) => r.status),
          [429, 429, 429],
          'from either worker',
        );
        t.equal((await store.traces.list(a.id)).length, TRACES_MAX);
      });

      t.test('a second waitlist sign-up for an email replaces nothing, and says nothing', async (t) => {
        const email = `lead-${front}@example.com`;
        const first = await server.call('/v1/waitlist', { body: { email, company: 'Owner Ltd', use_case: 'Route support tickets', consent: true } });
        const second = await server.call('/v1/waitlist', { body: { email, company: 'Mallory', use_case: 'Overwrite the owner', consent: false } });
        t.same([second.status, second.json], [first.status, first.json], 'the same answer');
        t.match(await store.waitlist.get(email), { company: 'Owner Ltd', use_case: 'Route support tickets', consent: true });
      });

      t.test("one key's idempotency entries never evict another's", async (t) => {
        const idem = (key: string, name: string) =>
          server.call('/v1/systemone', { key, body: CHEAP, headers: { 'Idempotency-Key': name }, fresh: true, timeoutMs: 120_000 });
        const mine = await idem(a.secret, 'a-1');
        t.equal(mine.status, 200);
        for (let i = 0; i < IDEMPOTENCY_MAX + 2; i++) t.equal((await idem(b.secret, `b-${i}`)).status, 200);
        const again = await idem(a.secret, 'a-1');
        t.equal(again.headers.get('idempotent-replayed'), 'true', "A's entry survived B's flood");
        t.equal(again.json.id, mine.json.id);
        t.equal((await idem(b.secret, 'b-0')).headers.get('idempotent-replayed'), null, "B's own oldest went");
      });
    });
  }
}

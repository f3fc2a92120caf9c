// A stopping server (SIGTERM's path, src/cluster) on both transports: it refuses new connections at
// once, answers the request in flight within its grace, and cuts one that outlasts the grace
// instead of waiting for it forever.
import t from 'tap';
import { createHttpApp } from '../../src/http/pipeline.js';
import { startHttpServer } from '../../src/http/server.js';
import type { HttpImplementation, Route } from '../../src/api/route.js';
import { call } from '../../bench/lib/http.js';

const routes: Route[] = [
  {
    method: 'GET',
    path: '/slow/{ms}',
    handler: async (req) => {
      await new Promise((resolve) => setTimeout(resolve, Number(req.params.ms)));
      return { status: 200, body: { slept: Number(req.params.ms) } };
    },
  },
];

for (const impl of ['uws', 'node'] as HttpImplementation[]) {
  t.test(`transport ${impl}`, async (t) => {
    const start = () => startHttpServer({ host: '127.0.0.1', port: 0, handler: createHttpApp({ routes, maxBodyBytes: 1024, log: () => {} }), prefer: impl });

    t.test('a request in flight is answered within the grace; a new connection is refused', async (t) => {
      const server = await start();
      const url = `http://127.0.0.1:${server.port}`;
      const inFlight = call(`${url}/slow/800`, { timeoutMs: 10_000, fresh: true });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const closed = server.close(5_000);
      const late = await call(`${url}/slow/0`, { timeoutMs: 2_000, fresh: true });
      t.equal(late.status, 0, `a connection opened after close is refused (${late.error})`);
      const reply = await inFlight;
      t.equal(reply.status, 200, 'the request in flight got its answer');
      t.same(JSON.parse(reply.text), { slept: 800 });
      await closed;
    });

    t.test('one that outlasts the grace is cut when the grace ends', async (t) => {
      const server = await start();
      const inFlight = call(`http://127.0.0.1:${server.port}/slow/5000`, { timeoutMs: 10_000, fresh: true });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const started = Date.now();
      await server.close(300);
      const waited = Date.now() - started;
      t.ok(waited >= 250 && waited < 3_000, `close waited the grace, ${waited} ms, not the request's 5 s`);
      t.equal((await inFlight).status, 0, 'its connection was closed without an answer');
    });
  });
}

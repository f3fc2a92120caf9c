// Every request is answered: an error that cannot be rendered becomes the generic 500, never a
// rejected promise (no answer at all on uWS, an unhandled rejection on node:http).
import t from 'tap';
import { ApiError } from '../../src/api/errors.js';
import { createHttpApp } from '../../src/http/pipeline.js';

t.test('an answer or an error that no JSON can hold is answered 500, and logged', async (t) => {
  const logged: string[] = [];
  const app = createHttpApp({
    routes: [
      { method: 'GET', path: '/context', handler: () => Promise.reject(new ApiError('conflict', 'a BigInt in the context', { n: 1n })) },
      { method: 'GET', path: '/bigint', handler: () => ({ status: 200, body: { n: 1n } }) },
    ],
    log: (line) => logged.push(line),
  });
  for (const path of ['/context', '/bigint']) {
    const req = app.begin({ method: 'GET', url: path, headers: {}, ip: '127.0.0.1', signal: new AbortController().signal });
    const wire = await app.handle(req);
    t.equal(wire.status, 500, path);
    t.match(JSON.parse(wire.body.toString()), { detail: { error_type: 'internal_error' } });
  }
  t.equal(logged.length, 2, 'each logged once, as an internal error');
});

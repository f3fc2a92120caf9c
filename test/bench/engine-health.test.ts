// bench:api records what GET /health says of each engine: its load-time check and, from servers
// that report it, the path its kernels resolved to; a server without `engines[].path` is read too.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { describeEngine, describeEngines, engineHealth, readEngineHealth } from '../../bench/lib/engine-health.js';

const checked = { engine: 0, device: null, status: 'ready', kernels: 'exact', deterministic: true, max_difference: 0 };
const path = { flash_attention: true, kv_gather: true, covered: true, uncovered: [] };

t.test('reads the check, and the resolved path where there is one', async (t) => {
  t.same(engineHealth({ status: 'ok', engines: [checked] }), [{ engine: 0, status: 'ready', kernels: 'exact', deterministic: true, max_difference: 0 }]);
  const [withPath] = engineHealth({ engines: [{ ...checked, path }] });
  t.same(withPath!.path, path);
  t.equal(
    describeEngine(withPath!),
    'engine 0: exact kernels, deterministic (largest difference 0 nats); flash attention on, KV gather on, covered by the promise',
  );
  t.equal(
    describeEngine(engineHealth({ engines: [checked] })[0]!),
    'engine 0: exact kernels, deterministic (largest difference 0 nats); path not reported by this server',
  );
  const off = engineHealth({
    engines: [
      {
        ...checked,
        deterministic: false,
        max_difference: 0.2,
        kernels_note: 'exact and stock kernels differ by 3 nats',
        kernels: 'fast',
        path: { flash_attention: false, kv_gather: false, covered: false, uncovered: ['flash attention resolved off', 'no KV gather'] },
      },
      { engine: 1, status: 'loading', kernels: null, deterministic: null, max_difference: null },
    ],
  });
  t.equal(
    describeEngines(off),
    'engine 0: fast kernels, NOT deterministic (largest difference 0.2 nats), stock kernels because exact and stock kernels differ by 3 nats; flash attention off, KV gather off, not covered: flash attention resolved off, no KV gather; ' +
      'engine 1: kernels unknown kernels, not checked; path not reported by this server',
  );
  // Not /health's shape: nothing to record, and said so.
  for (const body of [null, 'down', { engines: 'none' }, {}]) t.same(engineHealth(body), []);
  t.equal(describeEngines([]), 'no engine in /health');
  // A path of another shape is left out rather than misread.
  t.notOk('path' in engineHealth({ engines: [{ ...checked, path: { flash_attention: 'yes' } }] })[0]!);
});

t.test('asks /health until the engines have loaded', async (t) => {
  let asked = 0;
  const server = http.createServer((_req, res) => {
    asked++;
    const engine = asked < 3 ? { ...checked, status: 'loading', kernels: null, deterministic: null, max_difference: null } : { ...checked, path };
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ status: asked < 3 ? 'loading' : 'ok', engines: [engine] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const engines = await readEngineHealth(url, 10_000);
  t.equal(asked, 3);
  t.same(engines[0]!.path, path);
  t.equal(engines[0]!.deterministic, true);
});

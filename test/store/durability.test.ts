import t from 'tap';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../src/store/index.js';
import { backendsFor } from '../helpers/backends.js';

const CHILD = fileURLToPath(new URL('./fixtures/durable-child.ts', import.meta.url));

for (const backend of await backendsFor(t)) {
  t.test(`${backend.name}: acknowledged writes survive kill -9 of the writer right after the acknowledgement`, async (t) => {
    const dir = await backend.fresh();
    // Opened before the child writes: what another process commits must be visible to this handle.
    const store = await openStore(dir, backend.options);
    const env = { ...process.env, ARBITRA_KEY_SECRET: backend.options.keySecret ?? '' };
    const child = spawn(process.execPath, [...process.execArgv, CHILD, dir], { stdio: ['ignore', 'pipe', 'inherit'], env });
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const nl = out.indexOf('\n');
        if (nl >= 0) {
          child.kill('SIGKILL');
          resolve(out.slice(0, nl));
        }
      });
      child.on('exit', (code) => reject(new Error(`child exited early (${code})`)));
    });
    const exit = await new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_c, s) => r(s)));
    t.equal(exit, 'SIGKILL');
    const acked = JSON.parse(line) as { id: string; secret: string; doomed: string };

    t.equal((await store.keys.verify(acked.secret))?.id, acked.id, 'created key verifies after the crash');
    t.equal(await store.keys.verify(acked.doomed), null, 'revocation survived');
    t.equal((await store.waitlist.get('wait@x.io'))?.use_case, 'durability check');
    t.ok(await store.retention.get(acked.id, 'req_durable'), 'retained record survived');
    t.equal((await store.traces.list(acked.id)).length, 1, 'trace survived');
    await store.close();

    const reopened = await openStore(dir, backend.options);
    t.teardown(() => reopened.close());
    t.equal((await reopened.keys.verify(acked.secret))?.id, acked.id, 'and after reopening the environment');
    t.equal((await reopened.waitlist.get('wait@x.io'))?.consent, true);
  });
}

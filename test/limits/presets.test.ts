// The two limits presets on a real `arbitra serve` with the small test model: the self-hosted
// default caps no one and still counts usage; `--limits hosted` says so at start-up and reports its
// monthly cap. The presets' values and the daily allowance are tested cheaply in config.test.ts and
// gate.test.ts; this file shows the server wires them through.
import t from 'tap';
import { spawn } from 'node:child_process';
import { CLI, CONSOLE_TOKEN, MODEL_FILE, cannotRun, startServer } from '../integration/helpers/server.js';

const CHEAP = { state: 'My invoice is wrong.', questions: { q: { instructions: 'Is this about billing?' } } };
// The base test model fails the obvious-questions check; skipping it keeps two cores for the test
// (startServer skips it unasked; the hosted start below is a process of its own).
const QUIET = { ARBITRA_SELF_TEST: 'off' };

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  t.test('default limits: monthly_cap 0, and decisions are still counted', async (t) => {
    const server = await startServer(t.testdir(), { workers: 0 });
    t.teardown(() => server.stop());
    const email = 'solo@example.com';
    const key = await server.createKey(email);
    for (let i = 0; i < 2; i++) t.equal((await server.call('/v1/systemone', { body: CHEAP, key: key.secret })).status, 200, `decision ${i}`);

    const account = await server.call('/v1/console/account', { headers: server.console(email) });
    t.equal(account.status, 200);
    t.match(account.json, { monthly_cap: 0, total_requests: 2, keys: [{ id: key.id, month_requests: 2 }] });
    const usage = await server.call('/v1/console/usage', { headers: server.console(email) });
    t.match(usage.json.rows, [{ key_id: key.id, requests: 2, rate_limited: 0 }]);
  });

  t.test('--limits hosted (over ARBITRA_LIMITS): one start-up line names the limits; monthly_cap 20000', async (t) => {
    const inherited = Object.entries(process.env).filter(([k]) => !k.startsWith('ARBITRA_'));
    const env = { ...Object.fromEntries(inherited), ...QUIET, ARBITRA_LIMITS: 'self-hosted', ARBITRA_CONSOLE_TOKEN: CONSOLE_TOKEN };
    const args = ['serve', '--limits', 'hosted', '--model', MODEL_FILE, '--data-dir', t.testdir(), '--port', '0', '--workers', '0'];
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    t.teardown(async () => {
      child.kill('SIGTERM');
      await exited;
    });
    let stderr = '';
    const limits = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (c: Buffer) => {
        stderr += c.toString();
        const m = /^arbitra limits .*$/m.exec(stderr);
        if (m) resolve(m[0]);
      });
      child.once('exit', (code) => reject(new Error(`arbitra serve exited (${code}):\n${stderr}`)));
    });
    t.equal(limits, 'arbitra limits (hosted): 10 requests/s and 4 in flight per key, 1000 free decisions per user per day, monthly cap 20000 per user');
    t.notMatch(stderr, CONSOLE_TOKEN, 'the console token is never logged');
    const url = /^arbitra listening on (http:\/\/\S+)/m.exec(stderr)![1]!;
    const account = await fetch(`${url}/v1/console/account`, {
      headers: { 'x-arbitra-console-token': CONSOLE_TOKEN, 'x-arbitra-user-email': 'hosted@example.com' },
    });
    t.equal(account.status, 200);
    t.match(await account.json(), { monthly_cap: 20000, total_requests: 0 });
  });
}

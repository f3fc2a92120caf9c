// Which secrets may serve: placeholders and weak values stop a start beyond loopback and only warn
// on it, every example file's secret is refused, and `arbitra secrets generate` makes ones that pass.
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { estimatedBits, generateSecrets, judgeSecrets, STRENGTH_FLOOR_BITS, weakness } from '../../src/cluster/secrets.js';
import { isLoopback } from '../../src/addresses.js';
import { deployEnv } from '../helpers/deploy-env.js';

const fresh = Object.fromEntries(generateSecrets());

t.test('loopback is this machine only', async (t) => {
  for (const host of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1']) t.ok(isLoopback(host), host);
  for (const host of ['0.0.0.0', '::', '10.0.1.11', 'example.com', '128.0.0.1', '::2', 'localhost.example.com']) t.notOk(isLoopback(host), host);
});

t.test('the estimate refuses what is plainly short, repeated or a placeholder', async (t) => {
  t.match(weakness('CHANGE-ME-console-token'), /placeholder/);
  t.match(weakness('change_me_please_0123456789abcdefghij'), /placeholder/);
  t.match(weakness('a'.repeat(200)), /bits/, 'a run counts twice, not 200 times');
  t.match(weakness('0123456789abcdefghijklmnopqrstuvwxyz'), /bits/, 'a sequence too');
  t.match(weakness('Tr0ub4dor&3xyzzy'), /bits/, '16 characters of four classes fall short');
  t.equal(weakness('integration-console-token-0123456789'), null, 'a long phrase passes: the floor is an estimate, not a dictionary');
  // openssl rand -hex 16: 32 hex digits, 128 bits; a chance run of three costs a digit at most.
  t.ok(estimatedBits('3f2a9c0d81be47f6a5c3e9d2b0f41a7c') >= STRENGTH_FLOOR_BITS);
  for (const [name, value] of generateSecrets()) t.equal(weakness(value), null, `${name} from secrets generate`);
  t.ok(estimatedBits(fresh.ARBITRA_CONSOLE_TOKEN!) >= 200, 'generated values are far above the floor');
});

t.test("every secret in deploy/env's examples stops a start beyond loopback", async (t) => {
  const api = loadConfig([], deployEnv('env/api.env.example'));
  const refused = judgeSecrets(api, 'serve', {}).refused;
  for (const name of ['ARBITRA_CONSOLE_TOKEN', 'ARBITRA_KEY_SECRET', 'ARBITRA_ENGINE_SECRET', 'the database password']) {
    t.ok(
      refused.some((line) => line.startsWith(`${name} cannot serve beyond loopback`) && /placeholder.*arbitra secrets generate/.test(line)),
      `${name} refused`,
    );
  }
  const engine = loadConfig([], { ...deployEnv('env/engine.env.example'), ...deployEnv('env/engine-0.env.example') });
  t.match(judgeSecrets(engine, 'engine', {}).refused, [/^ARBITRA_ENGINE_SECRET cannot serve beyond loopback \(--listen 10\.0\.2\.21\)/]);
  const compose = deployEnv('env/compose-arbitra.env.example');
  const inCompose = loadConfig([], { ...compose, ARBITRA_HOST: '0.0.0.0', ARBITRA_STORE_URL: 'postgres://arbitra@postgres:5432/arbitra' });
  t.equal(judgeSecrets(inCompose, 'serve', compose).refused.length, 3, 'key secret, console token and PGPASSWORD');
});

t.test('fresh secrets from `arbitra secrets generate` serve beyond loopback', async (t) => {
  const env = { ...deployEnv('env/api.env.example'), ...fresh, ARBITRA_STORE_URL: `postgres://arbitra:${fresh.PGPASSWORD}@10.0.3.31:5432/arbitra` };
  t.same(judgeSecrets(loadConfig([], env), 'serve', env), { refused: [], warnings: [] });
  t.equal(fresh.PGPASSWORD, fresh.POSTGRES_PASSWORD, "compose's two env files hold one password");
  t.not(generateSecrets()[0]![1], fresh.ARBITRA_KEY_SECRET, 'fresh each time');
});

t.test('on loopback a weak secret is a warning, and an unused one is not judged', async (t) => {
  const env = { ARBITRA_CONSOLE_TOKEN: 'CHANGE-ME-console-token', ARBITRA_ENGINE_SECRET: 'CHANGE-ME-engine-secret' };
  const verdict = judgeSecrets(loadConfig([], env), 'serve', env);
  t.same(verdict.refused, []);
  t.match(verdict.warnings, [/^WARNING: ARBITRA_CONSOLE_TOKEN is weak \(it is a placeholder/, /^WARNING: ARBITRA_ENGINE_SECRET is weak/]);
  t.same(judgeSecrets(loadConfig([], {}), 'serve', {}), { refused: [], warnings: [] }, 'no secret set: nothing to judge');
  const remote = { ...env, ARBITRA_ENGINES: 'gpu-1.internal:7000' };
  t.match(judgeSecrets(loadConfig(['--workers', '1'], remote), 'serve', remote).refused, [
    /^ARBITRA_ENGINE_SECRET cannot serve beyond loopback \(--engines tcp:\/\/gpu-1\.internal:7000\)/,
  ]);
});

// deploy/compose.yaml as an operator runs it, with podman-compose: Arbitra with its state in
// PostgreSQL and Prometheus scraping it. The stack starts on the image of the commit this one
// upgrades from; the Arbitra service is then replaced by this commit's image on the same PostgreSQL
// volume, and every key and count made before is still there. The files are copied unchanged into a
// folder of their own, beside env files with fresh secrets, so a real deploy/env/*.env is never touched.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { call } from '../../bench/lib/http.js';
import { decisionBody } from '../../bench/lib/bodies.js';
import { freePort } from '../../bench/lib/serve.js';
import { packageRoot } from '../../src/paths.js';
import {
  IMAGE,
  PREVIOUS_IMAGE,
  containerNamed,
  createKey,
  decide,
  inspectImage,
  podman,
  sh,
  uniqueName,
  usageCount,
  waitHealthy,
  type Container,
} from './podman.js';

const root = packageRoot();
const EMAIL = 'compose@example.com';
const START_MS = 300_000;
const SCRAPE_MS = 90_000;

const secret = (): string => crypto.randomBytes(24).toString('hex');
const project = uniqueName('compose');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-compose-'));
fs.mkdirSync(path.join(dir, 'deploy', 'env'), { recursive: true });
fs.cpSync(path.join(root, 'deploy', 'prometheus'), path.join(dir, 'deploy', 'prometheus'), { recursive: true });
fs.copyFileSync(path.join(root, 'deploy', 'compose.yaml'), path.join(dir, 'deploy', 'compose.yaml'));
const password = secret();
const consoleToken = secret();
// The operator's settings go in the same env file: here the test model on small KV lanes (what is
// tested is the stack, not the model), which the models volume is given before the stack starts.
const settings =
  'ARBITRA_MODEL=gemma-3-270m-q4_k_m\nARBITRA_WORKERS=1\nARBITRA_MAX_SEQUENCES=8\nARBITRA_LONG_CTX_SIZE=0\nARBITRA_SELF_TEST=off\nARBITRA_DETERMINISM_CHECK=off\n';
fs.writeFileSync(
  path.join(dir, 'deploy', 'env', 'arbitra.env'),
  `ARBITRA_KEY_SECRET=${secret()}\nARBITRA_CONSOLE_TOKEN=${consoleToken}\nPGPASSWORD=${password}\n${settings}`,
);
fs.writeFileSync(path.join(dir, 'deploy', 'env', 'postgres.env'), `POSTGRES_PASSWORD=${password}\n`);

const [httpPort, prometheusPort] = [await freePort(), await freePort()];
const compose = (args: string[], image: string) =>
  sh('podman-compose', ['-p', project, '-f', path.join(dir, 'deploy', 'compose.yaml'), ...args], {
    env: { ...process.env, IMAGE: image, HTTP_PUBLISH: `127.0.0.1:${httpPort}`, PROMETHEUS_PUBLISH: `127.0.0.1:${prometheusPort}` },
    timeoutMs: 600_000,
  });
t.teardown(async () => {
  await compose(['down', '--volumes'], IMAGE).catch(() => undefined);
  await podman(['volume', 'rm', '-f', `${project}_models`], { ok: false });
  fs.rmSync(dir, { recursive: true, force: true });
});

const arbitra: Container = containerNamed(`${project}_arbitra_1`, `http://127.0.0.1:${httpPort}`);
const postgres = containerNamed(`${project}_postgres_1`, '');
/** The key made on the previous image, which the upgrade must keep. */
let key = '';
const psql = async (sql: string): Promise<string> => (await postgres.exec(['psql', '--username', 'arbitra', '--dbname', 'arbitra', '-tAc', sql])).stdout.trim();

t.test('the stack on the previous image: Arbitra keeps its keys in PostgreSQL, hashed', async (t) => {
  // podman-compose names the models volume <project>_models and uses it when it is there already.
  const models = `${project}_models`;
  await podman(['volume', 'create', models]);
  const mounts = ['-v', `${root}/models:/from:ro`, '-v', `${models}:/var/lib/arbitra/models`];
  const files = ['/from/gemma-3-270m-q4_k_m.gguf', '/from/gemma-3-270m-q4_k_m.gguf.sha256'];
  await podman([
    'run',
    '--rm',
    '--no-healthcheck',
    '--network',
    'host',
    ...mounts,
    '--entrypoint',
    'cp',
    PREVIOUS_IMAGE,
    '--preserve=timestamps',
    ...files,
    '/var/lib/arbitra/models/',
  ]);
  await compose(['up', '-d'], PREVIOUS_IMAGE);
  await waitHealthy(arbitra, START_MS);
  const logs = await arbitra.logs();
  t.match(logs, /store: PostgreSQL at postgres:\/\/arbitra@postgres:5432\/arbitra/, 'the store is the compose PostgreSQL');
  t.notOk(logs.includes(password), 'its password is in no log line');
  key = await createKey(arbitra, EMAIL);
  t.equal((await decide(arbitra, key, decisionBody('small', 1), 300_000)).status, 200, 'a decision with a key made by the CLI in the container');
  t.equal(await psql('select count(*) from api_keys where revoked_at is null'), '1', 'the key is a row of PostgreSQL');
  const dump = (await postgres.exec(['pg_dump', '--username', 'arbitra', '--data-only', 'arbitra'])).stdout;
  t.notOk(dump.includes(key), 'the secret itself is nowhere in the database');
});

t.test("upgraded in place to this commit's image: the key, its usage and the schema carry over", async (t) => {
  const before = await usageCount(arbitra, consoleToken, EMAIL);
  t.ok(before >= 1, `${before} decisions counted before the upgrade`);
  const migrations = await psql('select count(*) from schema_migrations');
  await compose(['up', '-d', '--force-recreate', '--no-deps', 'arbitra'], IMAGE);
  await waitHealthy(arbitra, START_MS);
  const running = (await podman(['inspect', '--format', '{{.ImageName}}', arbitra.name])).stdout.trim();
  t.equal(running, IMAGE, "the service now runs this commit's image");
  const revision = async (image: string): Promise<string | undefined> => (await inspectImage(image)).Labels['org.opencontainers.image.revision'];
  t.not(await revision(IMAGE), await revision(PREVIOUS_IMAGE), 'built from another commit than the image it replaced');
  t.equal(await usageCount(arbitra, consoleToken, EMAIL), before, 'every decision counted before the upgrade is still counted');
  t.equal((await decide(arbitra, key, decisionBody('small', 2), 300_000)).status, 200, 'the key made before the upgrade still opens it');
  t.ok(Number(await psql('select count(*) from schema_migrations')) >= Number(migrations), 'no migration was lost');
  const listed = await arbitra.exec(['arbitra', 'keys', 'list', '--email', EMAIL]);
  t.match(listed.stdout, new RegExp(key.slice(0, 8)), 'arbitra keys list shows it');
});

t.test('Prometheus scrapes Arbitra, finds it up, and has the alerting rules loaded', async (t) => {
  const prometheus = `http://127.0.0.1:${prometheusPort}`;
  const get = async <T>(route: string): Promise<T | null> => {
    const r = await call(`${prometheus}${route}`, { timeoutMs: 5_000 });
    return r.status === 200 ? (JSON.parse(r.text) as { data: T }).data : null;
  };
  const engineUp = async (): Promise<string[]> =>
    ((await get<{ result: { value: [number, string] }[] }>(`/api/v1/query?query=arbitra_engine_up`))?.result ?? []).map((r) => r.value[1]);
  const until = Date.now() + SCRAPE_MS;
  // The first scrapes may find the restarted service still loading its model (arbitra_engine_up 0).
  while ((await engineUp()).join() !== '1' && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 1000));
  t.same(await engineUp(), ['1'], "Arbitra's own series are in Prometheus: its engine is up");
  const targets = (await get<{ activeTargets: { labels: { job: string }; health: string; lastError: string }[] }>('/api/v1/targets'))?.activeTargets ?? [];
  t.same(
    targets.map((target) => [target.labels.job, target.health, target.lastError]),
    [['arbitra', 'up', '']],
    'one target, the arbitra service, up',
  );
  const rules = (await get<{ groups: { rules: { name: string; health: string }[] }[] }>('/api/v1/rules'))?.groups.flatMap((g) => g.rules) ?? [];
  t.ok(rules.length >= 7 && rules.every((r) => r.health !== 'err'), `the alerting rules are loaded: ${rules.map((r) => `${r.name} (${r.health})`).join(', ')}`);
  t.ok(
    rules.some((r) => r.name === 'ArbitraEngineDown'),
    'ArbitraEngineDown among them',
  );
});

// deploy/ is copied by operators, so it must not drift from the code: every variable it sets is
// one the service reads, its example settings load as a real configuration, the units start the
// commands that exist, and the proxy waits as long as a decision may run.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { LIMITS_DEFAULTS } from '../../src/limits/config.js';
import { deployEnv } from '../helpers/deploy-env.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const deploy = path.join(root, 'deploy');
const read = (file: string): string => fs.readFileSync(path.join(deploy, file), 'utf8');

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

t.test('every ARBITRA_ variable in deploy/ is one the service or its build reads', async (t) => {
  // The Containerfile sets the build switches (ARBITRA_CUDA, ARBITRA_CUDA_ARCHITECTURES), which
  // scripts/setup.mjs reads.
  const sources = [...walk(path.join(root, 'src')).filter((f) => f.endsWith('.ts')), path.join(root, 'scripts', 'setup.mjs')];
  const source = sources.map((f) => fs.readFileSync(f, 'utf8')).join('\n');
  const known = new Set(source.match(/ARBITRA_[A-Z0-9_]+/g));
  const used = new Set(walk(deploy).flatMap((f) => fs.readFileSync(f, 'utf8').match(/ARBITRA_[A-Z0-9_]+/g) ?? []));
  t.ok(used.size >= 10, `${used.size} variables used`);
  t.same([...used].filter((v) => !known.has(v)), [], 'none unknown');
});

t.test("the API node's example settings load: remote engines over TLS, PostgreSQL, the secrets", async (t) => {
  const c = loadConfig([], deployEnv('env/api.env.example'));
  t.equal(c.engines?.length, 4);
  t.ok(c.engines!.every((e) => e.startsWith('tls://')), 'every engine over TLS');
  t.match(c.store, /^postgres:\/\//);
  t.ok(c.keySecret && c.engineSecret && c.engineCa, 'key secret, engine secret and CA set');
  t.equal(c.listen, null);
  t.equal(c.trustedProxies.length, 1, 'HAProxy is the one trusted proxy, so per-address limits count clients');
});

t.test("an engine instance's example settings load: it listens with TLS", async (t) => {
  const c = loadConfig([], { ...deployEnv('env/engine.env.example'), ...deployEnv('env/engine-0.env.example') });
  t.same(c.listen, { host: '10.0.2.21', port: 7000 });
  t.ok(c.engineTls, 'certificate and key');
  t.equal(c.engines, null);
});

t.test("compose's service settings load with the example env file: PostgreSQL, its secrets", async (t) => {
  const compose = read('compose.yaml');
  const storeUrl = /ARBITRA_STORE_URL: (\S+)/.exec(compose)?.[1];
  const example = deployEnv('env/compose-arbitra.env.example');
  const config = loadConfig([], { ...example, ARBITRA_STORE_URL: storeUrl });
  t.equal(config.store, 'postgres://arbitra@postgres:5432/arbitra', 'no password in the URL or the compose file');
  t.ok(config.keySecret && config.consoleToken, 'the key secret and console token come from the env file');
  t.equal(example.PGPASSWORD, deployEnv('env/compose-postgres.env.example').POSTGRES_PASSWORD, 'the two examples hold the same password');
  const settings = compose
    .split('\n')
    .filter((l) => !l.trimStart().startsWith('#'))
    .join('\n');
  t.notMatch(settings, /PASSWORD|SECRET|TOKEN/i, 'no secret is set in compose.yaml, nor interpolated onto a command line');
});

t.test('the units run the commands that exist, with the env files the examples describe', async (t) => {
  const api = read('systemd/arbitra-api.service');
  t.match(api, /^ExecStart=\/usr\/bin\/node \/opt\/arbitra\/dist\/src\/cli\/main\.js serve$/m);
  t.match(api, /^EnvironmentFile=\/etc\/arbitra\/api\.env$/m);
  const engine = read('systemd/arbitra-engine@.service');
  t.match(engine, /^ExecStart=\/usr\/bin\/node \/opt\/arbitra\/dist\/src\/cli\/main\.js engine$/m);
  t.match(engine, /^Environment=CUDA_VISIBLE_DEVICES=%i$/m, 'instance N sees GPU N only');
  t.match(engine, /^EnvironmentFile=\/etc\/arbitra\/engine-%i\.env$/m);
  t.ok(fs.existsSync(path.join(root, 'dist/src/cli/main.js')), 'the entry point the units name is what the build makes');
});

t.test('HAProxy checks /health and waits longer than a decision may run', async (t) => {
  const cfg = read('haproxy/haproxy.cfg');
  t.match(cfg, /^\s*option httpchk\s*$/m);
  // A bare `option httpchk GET /health` is HTTP/1.0, which the uWebSockets.js front answers 505.
  t.match(cfg, /http-check send meth GET uri \/health ver HTTP\/1\.1 hdr Host \S+/);
  t.match(cfg, /http-check expect status 200/);
  const server = Number(/timeout server (\d+)s/.exec(cfg)?.[1]);
  t.ok(server > LIMITS_DEFAULTS.requestDeadlineSeconds, `timeout server ${server} s > the ${LIMITS_DEFAULTS.requestDeadlineSeconds} s deadline`);
  t.notMatch(cfg, /retry-on[^\n]*(empty-response|response-timeout|5\d\d)/, 'a decision that reached a node is never sent again');
});

t.test('HAProxy tells the nodes who the client is, over which scheme, and keeps /metrics to itself', async (t) => {
  const cfg = read('haproxy/haproxy.cfg');
  const frontend = /^frontend [^\n]*\n((?:[ \t]+[^\n]*\n|\n)*)/m.exec(cfg)?.[1] ?? '';
  t.match(frontend, /^\s*option forwardfor\s*$/m, 'the client address appended to X-Forwarded-For');
  t.match(frontend, /http-request set-header X-Forwarded-Proto https if \{ ssl_fc \}/, 'https when TLS ended here');
  t.match(frontend, /http-request set-header X-Forwarded-Proto http unless \{ ssl_fc \}/, 'a scheme the client claimed is replaced');
  t.match(frontend, /http-request deny[^\n]* if \{ path_beg \/metrics \}/, '/metrics is refused on the public side');
});

// deploy/container and deploy/compose.yaml without running a container (npm run test:container runs
// them): the labels the Containerfile defaults to are this checkout's, the settings the image gives
// the service load as a real configuration, a stop waits longer than the server drains, and the
// image's health check tells 200 from anything else. deploy.test.ts loads compose's settings.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { DEFAULT_SHUTDOWN_GRACE_SECONDS } from '../../src/http/types.js';
import { packageRoot } from '../../src/paths.js';

const root = packageRoot();
const read = (file: string): string => fs.readFileSync(path.join(root, file), 'utf8');
const containerfile = read('deploy/container/Containerfile');
const compose = read('deploy/compose.yaml');

const argDefault = (name: string): string | undefined => new RegExp(`^ARG ${name}=(\\S+)$`, 'm').exec(containerfile)?.[1];

t.test("the Containerfile's label defaults are this checkout's version and llama.cpp", async (t) => {
  t.equal(argDefault('VERSION'), (JSON.parse(read('package.json')) as { version: string }).version);
  t.equal(argDefault('LLAMA_CPP'), (JSON.parse(read('node_modules/node-llama-cpp/llama/llama.cpp.info.json')) as { tag: string }).tag);
  t.equal(argDefault('BACKEND'), 'cpu');
});

t.test("the image's settings load: every interface, the two volumes' folders", async (t) => {
  const env = Object.fromEntries([...containerfile.matchAll(/^(?:ENV)?\s+(ARBITRA_[A-Z_]+)=(\S+?)(?: \\)?$/gm)].map((m) => [m[1]!, m[2]!]));
  t.same(Object.keys(env).sort(), ['ARBITRA_DATA_DIR', 'ARBITRA_HOST', 'ARBITRA_MODELS_DIR', 'ARBITRA_PORT']);
  const config = loadConfig([], env);
  t.equal(config.host, '0.0.0.0', 'reachable from outside the container');
  t.equal(config.port, 8080);
  t.equal(config.store, '/var/lib/arbitra/data');
  t.match(containerfile, /^VOLUME \["\/var\/lib\/arbitra\/data", "\/var\/lib\/arbitra\/models"\]$/m);
  t.match(containerfile, /^USER 10001:10001$/m, 'not root');
});

t.test('every build command the docs give names the backend, which podman 4.3 needs', async (t) => {
  const commands = ['README.md', 'docs/operations.md', 'deploy/container/Containerfile'].flatMap((file) =>
    [...read(file).matchAll(/podman build [^\n]*deploy\/container\/Containerfile[^\n]*/g)].map((m) => `${file}: ${m[0]}`),
  );
  t.ok(commands.length >= 4, `${commands.length} commands`);
  t.same(
    commands.filter((c) => !/--build-arg BACKEND=(cpu|cuda)\b/.test(c)),
    [],
    'each has --build-arg BACKEND',
  );
  t.match(compose, /^ {6}args:\n {8}BACKEND: cpu$/m, "and so does compose's build");
});

t.test('a stop waits longer than the server drains', async (t) => {
  const grace = Number(/stop_grace_period: (\d+)s/.exec(compose)?.[1]);
  t.ok(grace > DEFAULT_SHUTDOWN_GRACE_SECONDS, `compose waits ${grace} s > the ${DEFAULT_SHUTDOWN_GRACE_SECONDS} s drain`);
  const unit = Number(/^TimeoutStopSec=(\d+)$/m.exec(read('deploy/systemd/arbitra-api.service'))?.[1]);
  t.ok(unit > DEFAULT_SHUTDOWN_GRACE_SECONDS, `systemd waits ${unit} s`);
  t.match(containerfile, /^STOPSIGNAL SIGTERM$/m);
});

t.test('the health check: exit 0 on a 200 from /health, 1 on a 503 or no answer', async (t) => {
  let status = 200;
  const server = http.createServer((req, res) => res.writeHead(req.url === '/health' ? status : 404).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const port = String((server.address() as AddressInfo).port);
  const check = async (env: Record<string, string>): Promise<number> =>
    promisify(execFile)(process.execPath, [path.join(root, 'deploy/container/healthcheck.mjs')], { env: { ...process.env, ...env } }).then(
      () => 0,
      (err: { code: number }) => err.code,
    );
  t.equal(await check({ ARBITRA_PORT: port, ARBITRA_HOST: '0.0.0.0' }), 0, 'healthy; a wildcard address is asked on loopback');
  status = 503;
  t.equal(await check({ ARBITRA_PORT: port, ARBITRA_HOST: '127.0.0.1' }), 1, 'loading or wedged');
  server.close();
  t.equal(await check({ ARBITRA_PORT: port }), 1, 'nothing listening');
});

// The engine service over TCP with a fake engine behind it: every call proves the shared secret and
// the engine proves it back (a wrong one is refused either way, and says so; a proof cannot be
// replayed, reflected or carried to another method), the facts, scores and counters cross, the
// health check needs no secret, TLS works with a trusted certificate and not without, and the
// config names what is missing or malformed.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { parseEngineAddress } from '../../src/engine/rpc/address.js';
import { answerCall, CallVerifier, engineProved, proofOf, signCall, verifyProof, newNonce } from '../../src/engine/rpc/auth.js';
import { openEngineChannel } from '../../src/engine/rpc/client.js';
import { EngineClient } from '../../src/engine/rpc/codec.js';
import { serveEngine, type ServedEngine, type TlsFiles } from '../../src/engine/rpc/server.js';
import type { EngineInfo, EngineStats, TextScoreResult } from '../../src/engine/types.js';

const SECRET = 'a-shared-engine-secret-0123';
const INFO = { path: '/models/gemma-3-270m-q4_k_m.gguf', sha256: 'ab'.repeat(32), backend: 'cpu' } as EngineInfo;
const RESULT: TextScoreResult = { branches: [[-0.25, -1.5]], promptTokens: 9, prefixTokens: 6, evaluatedTokens: 9, cachedTokens: 0 };
const STATS = { decodes: 3, queueDepth: 0, workInHandMs: 1200, wedged: false, livenessBoundMs: 30_000 } as EngineStats;
const REQUEST = { system: null, prefix: 'state\n', branches: [{ suffix: 'q?', answers: [[1], [2]] }], maxPromptTokens: 100 };
const METHOD = '/arbitra.engine.v1.Engine/Score';

const fake: ServedEngine = {
  info: async () => INFO,
  scoreText: async () => RESULT,
  stats: () => STATS,
};

async function listen(t: Test, secret = SECRET, tls?: TlsFiles) {
  const logs: string[] = [];
  const server = await serveEngine(fake, { host: '127.0.0.1', port: 0, secret, tls }, (l) => logs.push(l));
  t.teardown(() => server.close());
  return { logs, address: server.address };
}

t.test('proofs: only the secret proves a call, for its side, its time and nonce and its method', async (t) => {
  const md = new grpc.Metadata();
  const nonce = signCall(md, SECRET, METHOD);
  t.ok('nonce' in new CallVerifier(SECRET).check(md, METHOD), 'a signed call passes');
  t.same(new CallVerifier('another-secret-0123456').check(md, METHOD), { refused: 'wrong engine secret' }, 'another secret');
  t.same(new CallVerifier(SECRET).check(md, '/arbitra.engine.v1.Engine/Stats'), { refused: 'wrong engine secret' }, 'carried to another method');
  const verifier = new CallVerifier(SECRET);
  verifier.check(md, METHOD);
  t.same(verifier.check(md, METHOD), { refused: 'a proof already used' }, 'a recorded call replayed');
  const old = new grpc.Metadata();
  signCall(old, SECRET, METHOD, Date.now() - 10 * 60_000);
  t.match(new CallVerifier(SECRET).check(old, METHOD), { refused: /clock is more than 120 s off/ }, 'a proof from ten minutes ago');
  t.same(new CallVerifier(SECRET).check(new grpc.Metadata(), METHOD), { refused: 'not an Arbitra API node' }, 'no proof at all');
  const answer = new grpc.Metadata();
  answerCall(answer, SECRET, nonce);
  t.ok(engineProved(answer, SECRET, nonce), "the engine's answer proves it");
  t.notOk(engineProved(answer, SECRET, newNonce()), 'for that nonce only');
  t.notOk(verifyProof(SECRET, 'api', nonce, proofOf(SECRET, 'engine', nonce)), "the other side's proof reflected back");
  t.notOk(verifyProof(SECRET, 'api', nonce, 42), 'not a string');
});

t.test('with the secret: the facts, scores and counters cross', async (t) => {
  const engine = await listen(t);
  t.match(engine.address, /^tcp:\/\/127\.0\.0\.1:\d+$/);
  const channel = openEngineChannel(engine.address, { secret: SECRET });
  t.teardown(() => channel.close());
  t.same(await channel.info(5000), INFO);
  t.same(await channel.score(REQUEST), RESULT);
  t.same(await channel.stats(5000), STATS);
  t.equal(await channel.serving(5000), true, 'health');
  t.same(engine.logs, []);
});

t.test('a wrong secret is refused, and both ends say why', async (t) => {
  const engine = await listen(t);
  const channel = openEngineChannel(engine.address, { secret: 'not-the-secret-0123456' });
  t.teardown(() => channel.close());
  await t.rejects(channel.info(5000), { name: 'EngineError', code: 'unavailable', message: 'the engine refused this node: wrong engine secret' });
  await t.rejects(channel.score(REQUEST), { message: 'the engine refused this node: wrong engine secret' }, 'scoring too');
  t.match(engine.logs.join('\n'), /engine: refused .*127\.0\.0\.1:\d+: wrong engine secret/);
  t.equal(engine.logs.length, 1, 'logged once, not once per call');
  t.equal(await channel.serving(5000), true, 'the health check needs no secret: probes carry none');
});

t.test('an engine that cannot prove the secret is not used', async (t) => {
  // An impostor that answers anyone, without the secret.
  const impostor = new grpc.Server();
  impostor.addService(EngineClient.service, {
    info: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { factsJson: JSON.stringify(INFO) }),
    score: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { branches: [{ values: [0] }] }),
    stats: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { statsJson: '{}' }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    impostor.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  t.teardown(() => impostor.forceShutdown());
  const channel = openEngineChannel(`tcp://127.0.0.1:${port}`, { secret: SECRET });
  t.teardown(() => channel.close());
  await t.rejects(channel.info(5000), { message: 'the engine could not prove the shared secret' });
  await t.rejects(channel.score(REQUEST), { message: 'the engine could not prove the shared secret' }, 'its scores are not taken');
});

t.test('a caller that is not an API node is refused; the engine keeps serving others', async (t) => {
  const engine = await listen(t);
  const where = parseEngineAddress(engine.address);
  if ('path' in where) throw new Error('not a TCP address');
  const stranger = new EngineClient(`${where.host}:${where.port}`, grpc.credentials.createInsecure());
  t.teardown(() => stranger.close());
  const refused = await new Promise<grpc.ServiceError | null>((resolve) =>
    (stranger as unknown as { score: (...a: unknown[]) => void }).score({}, (err: grpc.ServiceError | null) => resolve(err)),
  );
  t.equal(refused?.code, grpc.status.UNAUTHENTICATED, 'UNAUTHENTICATED');
  t.match(engine.logs.join('\n'), /not an Arbitra API node/);
  const channel = openEngineChannel(engine.address, { secret: SECRET });
  t.teardown(() => channel.close());
  t.same(await channel.score(REQUEST), RESULT, 'the next caller is served');
});

const openssl = spawnSync('openssl', ['version']).status === 0;
t.test('TLS: served with a certificate, trusted through a private CA, refused without it', { skip: !openssl && 'openssl is not installed' }, async (t) => {
  const dir = t.testdir();
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  const engine = await listen(t, SECRET, { cert: fs.readFileSync(cert), key: fs.readFileSync(key) });
  t.match(engine.address, /^tls:\/\/127\.0\.0\.1:\d+$/);
  const trusted = openEngineChannel(engine.address, { secret: SECRET, ca: fs.readFileSync(cert) });
  t.teardown(() => trusted.close());
  t.same(await trusted.info(5000), INFO);
  t.same(await trusted.score(REQUEST), RESULT, 'scores cross over TLS');
  const untrusted = openEngineChannel(engine.address, { secret: SECRET });
  t.teardown(() => untrusted.close());
  await t.rejects(untrusted.info(5000), { code: 'unavailable' }, 'an untrusted certificate is refused');
  const plain = openEngineChannel(engine.address.replace('tls://', 'tcp://'), { secret: SECRET });
  t.teardown(() => plain.close());
  await t.rejects(plain.info(5000), { code: 'unavailable' }, 'plain TCP to a TLS engine fails');
});

t.test('config: --engines, --listen and the secret', async (t) => {
  const env = { ARBITRA_ENGINE_SECRET: SECRET };
  const c = loadConfig(['--engines', '10.0.0.5:7000, tls://gpu-2.lan:7001,[fd00::1]:7002', '--workers', '2'], env);
  t.same(c.engines, ['tcp://10.0.0.5:7000', 'tls://gpu-2.lan:7001', 'tcp://[fd00::1]:7002']);
  t.same(parseEngineAddress('tcp://[fd00::1]:7002'), { host: 'fd00::1', port: 7002, tls: false }, 'an IPv6 address round-trips');
  t.same(loadConfig(['--listen', '0.0.0.0:7000'], env).listen, { host: '0.0.0.0', port: 7000 });
  t.throws(() => loadConfig(['--engines', 'a:1'], {}), /--engines needs ARBITRA_ENGINE_SECRET/);
  t.throws(() => loadConfig(['--listen', 'a:1'], {}), /--listen needs ARBITRA_ENGINE_SECRET/);
  t.throws(() => loadConfig(['--listen', 'a:1'], { ARBITRA_ENGINE_SECRET: 'short' }), /ARBITRA_ENGINE_SECRET must be at least 16 characters/);
  t.throws(() => loadConfig(['--engines', 'a:1,a:1'], env), /--engines names an engine twice/);
  t.throws(() => loadConfig(['--engines', 'a'], env), /--engines must be host:port, got "a"/);
  t.throws(() => loadConfig(['--listen', 'a:70000'], env), /--listen must be host:port/);
  t.throws(() => loadConfig(['--engines', 'a:1', '--gpus', '0'], env), /give one of them/);
  t.throws(() => loadConfig(['--engines', 'a:1', '--workers', '0'], env), /--engines needs --workers 1 or more/);
  t.throws(() => loadConfig(['--listen', 'a:1', '--tls-cert', 'c.pem'], env), /--tls-cert and --tls-key go together/);
});

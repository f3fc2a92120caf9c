// A remote engine's TCP socket with a fake engine behind it: both ends must prove the shared secret
// (a wrong one is refused either way, and says so), the facts arrive with the welcome, scores and
// counters cross, a silent client is dropped, TLS works with a trusted certificate and not without,
// and the config names what is missing or malformed.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { newNonce, proofOf, verifyProof } from '../../src/engine/handshake.js';
import { connectEngineTcp, parseEngineAddress, serveEngineTcp, type RemoteEngine } from '../../src/engine/tcp.js';
import type { EngineInfo, EngineStats, TextScoreResult } from '../../src/engine/types.js';
import { encodeFrame, FrameDecoder } from '../../src/engine/wire.js';

const SECRET = 'a-shared-engine-secret-0123';
const INFO = { path: '/models/gemma-3-270m-q4_k_m.gguf', sha256: 'ab'.repeat(32), backend: 'cpu' } as EngineInfo;
const RESULT: TextScoreResult = { branches: [[-0.25, -1.5]], promptTokens: 9, prefixTokens: 6, evaluatedTokens: 9, cachedTokens: 0 };
const STATS = { decodes: 3, tokensEvaluated: 42, branchesScored: 2, jobsDone: 1, jobsCancelled: 0, lastBatchTokens: 9, lastBatchBranches: 1, queueDepth: 0, cachedPrefixes: 1, decodeSeconds: 0.5, readoutSeconds: 0.01, cost: { perDecodeMs: 20, perTokenMs: 0.5, perRowMs: 0.1, decodesObserved: 2 }, pending: 0, workInHandMs: 1200 } satisfies EngineStats;
const REQUEST = { system: null, prefix: 'state\n', branches: [{ suffix: 'q?', answers: [[1], [2]] }], maxPromptTokens: 100 };

const fake: RemoteEngine = {
  info: async () => INFO,
  scoreText: async () => RESULT,
  stats: () => STATS,
};

async function listen(t: Test, secret = SECRET, tls?: { cert: Buffer; key: Buffer }) {
  const logs: string[] = [];
  const server = await serveEngineTcp(fake, { host: '127.0.0.1', port: 0, secret, tls }, (l) => logs.push(l));
  t.teardown(() => server.close());
  const where = parseEngineAddress(server.address);
  if ('path' in where) throw new Error('not a TCP address');
  return { ...where, logs, address: server.address };
}

t.test('proofs: only the secret answers a nonce, and only for the side that speaks', async (t) => {
  const nonce = newNonce();
  t.ok(verifyProof(SECRET, 'api', nonce, proofOf(SECRET, 'api', nonce)));
  t.notOk(verifyProof(SECRET, 'api', nonce, proofOf('another-secret-0123456', 'api', nonce)), 'another secret');
  t.notOk(verifyProof(SECRET, 'api', newNonce(), proofOf(SECRET, 'api', nonce)), 'another nonce: a recorded proof is useless');
  t.notOk(verifyProof(SECRET, 'engine', nonce, proofOf(SECRET, 'api', nonce)), "the other side's proof reflected back");
  t.notOk(verifyProof(SECRET, 'api', nonce, 42), 'not a string');
  t.notOk(verifyProof(SECRET, 'api', nonce, 'c2hvcnQ='), 'a short proof');
});

t.test('with the secret: the facts arrive with the welcome, then scores and counters cross', async (t) => {
  const engine = await listen(t);
  t.match(engine.address, /^tcp:\/\/127\.0\.0\.1:\d+$/);
  const { socket, info } = await connectEngineTcp({ host: engine.host, port: engine.port, secret: SECRET });
  t.teardown(() => socket.close());
  t.same(info, INFO);
  t.same(await socket.score(REQUEST), RESULT);
  t.same(await socket.stats(), STATS);
  t.same(engine.logs, []);
});

t.test('a wrong secret is refused, and both ends say why', async (t) => {
  const engine = await listen(t);
  await t.rejects(connectEngineTcp({ host: engine.host, port: engine.port, secret: 'not-the-secret-0123456' }), {
    name: 'EngineRefusedError',
    message: 'the engine refused this node: wrong engine secret',
  });
  t.match(engine.logs.join('\n'), /engine: refused 127\.0\.0\.1:\d+: wrong engine secret/);
});

t.test('an engine that cannot prove the secret is not used', async (t) => {
  const engine = await listen(t, 'an-impostor-engine-secret');
  // It refuses us first: our proof is not under its secret either.
  await t.rejects(connectEngineTcp({ host: engine.host, port: engine.port, secret: SECRET }), { name: 'EngineRefusedError' });
  // An impostor that welcomes anyone still cannot answer our nonce.
  const impostor = net.createServer((conn) => {
    conn.write(encodeFrame({ t: 'challenge', nonce: newNonce() }));
    const decoder = new FrameDecoder();
    conn.on('data', (chunk) => {
      if (decoder.push(chunk).length) conn.write(encodeFrame({ t: 'welcome', proof: proofOf('guess-0123456789abcdef', 'engine', 'x'), info: INFO }));
    });
  });
  await new Promise<void>((resolve) => impostor.listen(0, '127.0.0.1', resolve));
  t.teardown(() => impostor.close());
  await t.rejects(connectEngineTcp({ host: '127.0.0.1', port: (impostor.address() as net.AddressInfo).port, secret: SECRET }), {
    message: 'the engine could not prove the shared secret',
  });
});

t.test('a client that sends something else is refused; the engine keeps serving others', async (t) => {
  const engine = await listen(t);
  const conn = net.createConnection({ host: engine.host, port: engine.port });
  conn.write(encodeFrame({ t: 'score', id: 1, request: REQUEST }));
  const closed = await new Promise<string>((resolve) => {
    const decoder = new FrameDecoder();
    const seen: string[] = [];
    conn.on('data', (chunk) => seen.push(...decoder.push(chunk).map((f) => (f.header as { t: string }).t)));
    conn.on('close', () => resolve(seen.join(',')));
  });
  t.equal(closed, 'challenge,denied', 'challenged, then denied and closed');
  t.match(engine.logs.join('\n'), /not an Arbitra API node/);
  const { socket } = await connectEngineTcp({ host: engine.host, port: engine.port, secret: SECRET });
  t.same(await socket.score(REQUEST), RESULT, 'the next client is served');
  socket.close();
});

const openssl = spawnSync('openssl', ['version']).status === 0;
t.test('TLS: served with a certificate, trusted through a private CA, refused without it', { skip: !openssl && 'openssl is not installed' }, async (t) => {
  const dir = t.testdir();
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  const engine = await listen(t, SECRET, { cert: fs.readFileSync(cert), key: fs.readFileSync(key) });
  t.match(engine.address, /^tls:\/\/127\.0\.0\.1:\d+$/);
  const { socket, info } = await connectEngineTcp({ host: engine.host, port: engine.port, secret: SECRET, tls: { ca: fs.readFileSync(cert) } });
  t.same(info, INFO);
  t.same(await socket.score(REQUEST), RESULT, 'scores cross over TLS');
  socket.close();
  await t.rejects(connectEngineTcp({ host: engine.host, port: engine.port, secret: SECRET, tls: {} }), /self.signed certificate/i, 'an untrusted certificate is refused');
  await t.rejects(connectEngineTcp({ host: engine.host, port: engine.port, secret: SECRET }), 'plain TCP to a TLS engine fails');
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

// The engine service over TCP with a fake engine behind it: every call proves the shared secret
// over its message and the engine its reply (a wrong one is refused either way, and says so; a
// proof cannot be replayed, reflected, carried to another method, message or engine), the engine
// checks a caller before it reads its message and bounds what an unproven caller can open, failed
// proofs are throttled per address, the facts, scores and counters cross, the health check needs
// no secret, TLS works with a trusted certificate and not without, and the config names what is
// missing or malformed.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { parseEngineAddress } from '../../src/engine/rpc/address.js';
import { bodyHash, CallVerifier, newNonce, proofOf, replyProved, signCall, signReply, verifyProof } from '../../src/engine/rpc/auth.js';
import { openEngineChannel } from '../../src/engine/rpc/client.js';
import { EngineClient, MAX_MESSAGE_BYTES } from '../../src/engine/rpc/codec.js';
import { MAX_CONCURRENT_STREAMS, serveEngine, type ServedEngine, type TlsFiles } from '../../src/engine/rpc/server.js';
import type { PortBounds } from '../../src/engine/rpc/port.js';
import { addressBlock } from '../../src/addresses.js';
import { FailureThrottle } from '../../src/engine/rpc/throttle.js';
import type { EngineInfo, EngineStats, TextScoreRequest, TextScoreResult } from '../../src/engine/types.js';
import { hugeCall, rawCall, replaceAll, replay, streamFlood, tamperingProxy } from '../helpers/engine-port-attacks.js';

const SECRET = 'a-shared-engine-secret-0123';
const INFO = { path: '/models/gemma-3-270m-q4_k_m.gguf', sha256: 'ab'.repeat(32), backend: 'cpu' } as EngineInfo;
const RESULT: TextScoreResult = { branches: [[-0.25, -1.5]], promptTokens: 9, prefixTokens: 6, evaluatedTokens: 9, cachedTokens: 0 };
const STATS = { decodes: 3, queueDepth: 0, workInHandMs: 1200, wedged: false, livenessBoundMs: 30_000 } as EngineStats;
const REQUEST = { system: null, prefix: 'state\n', branches: [{ suffix: 'q?', answers: [[1], [2]] }], maxPromptTokens: 100 };
const METHOD = '/arbitra.engine.v1.Engine/Score';
const BODY = Buffer.from('a message');
const ENGINE = 'engine-a';

/** A fake engine that keeps the prefix of every request it was asked to score. */
function fakeEngine(): ServedEngine & { scored: string[] } {
  const scored: string[] = [];
  return {
    scored,
    info: async () => INFO,
    scoreText: async (request: TextScoreRequest) => {
      scored.push(request.prefix);
      return RESULT;
    },
    stats: () => STATS,
  };
}

async function listen(t: Test, opts: { secret?: string; tls?: TlsFiles; bounds?: PortBounds } = {}) {
  const logs: string[] = [];
  const engine = fakeEngine();
  const server = await serveEngine(engine, { host: '127.0.0.1', port: 0, secret: opts.secret ?? SECRET, tls: opts.tls, bounds: opts.bounds }, (l) =>
    logs.push(l),
  );
  t.teardown(() => server.close());
  const where = parseEngineAddress(server.address);
  if ('path' in where) throw new Error('not a TCP address');
  return { logs, address: server.address, scored: engine.scored, host: where.host, port: where.port };
}

function channel(t: Test, address: string, secret = SECRET) {
  const c = openEngineChannel(address, { secret });
  t.teardown(() => c.close());
  return c;
}

t.test('proofs: only the secret proves a call, for its side, time, nonce, method, engine and message', async (t) => {
  const md = new grpc.Metadata();
  const nonce = signCall(md, SECRET, { method: METHOD, engine: ENGINE, body: BODY });
  t.match(new CallVerifier(SECRET, ENGINE).check(md, METHOD), { nonce, body: bodyHash(BODY) }, 'a signed call passes, with the hash its message must have');
  t.same(new CallVerifier('another-secret-0123456', ENGINE).check(md, METHOD), { refused: 'wrong engine secret', failed: true }, 'another secret');
  t.same(
    new CallVerifier(SECRET, ENGINE).check(md, '/arbitra.engine.v1.Engine/Stats'),
    { refused: 'wrong engine secret', failed: true },
    'carried to another method',
  );
  const otherBody = md.clone();
  otherBody.set('arbitra-body', bodyHash(Buffer.from('another message')));
  t.same(new CallVerifier(SECRET, ENGINE).check(otherBody, METHOD), { refused: 'wrong engine secret', failed: true }, 'with the hash of another message');
  const otherEngine = md.clone();
  otherEngine.set('arbitra-engine', 'engine-b');
  t.same(new CallVerifier(SECRET, ENGINE).check(otherEngine, METHOD), { refused: 'wrong engine secret', failed: true }, 'readdressed to another engine');
  t.same(
    new CallVerifier(SECRET, 'engine-b').check(md, METHOD),
    { refused: 'the call is meant for another engine', failed: false, engine: 'engine-b' },
    'at another engine: refused without counting as a failure, and told its name',
  );
  const verifier = new CallVerifier(SECRET, ENGINE);
  verifier.check(md, METHOD);
  t.same(verifier.check(md, METHOD), { refused: 'a proof already used', failed: true }, 'a recorded call replayed');
  const old = new grpc.Metadata();
  signCall(old, SECRET, { method: METHOD, engine: ENGINE, body: BODY }, Date.now() - 10 * 60_000);
  t.match(new CallVerifier(SECRET, ENGINE).check(old, METHOD), { refused: /clock is more than 120 s off/, failed: true }, 'a proof from ten minutes ago');
  t.same(new CallVerifier(SECRET, ENGINE).check(new grpc.Metadata(), METHOD), { refused: 'not an Arbitra API node', failed: true }, 'no proof at all');
  const older = md.clone();
  older.remove('arbitra-body');
  t.match(
    new CallVerifier(SECRET, ENGINE).check(older, METHOD),
    { refused: /an API node older than this engine/ },
    "an older node's proof, which covers no message",
  );

  const reply = { nonce, engine: ENGINE, code: 0, body: bodyHash(Buffer.from('a reply')), error: '' };
  const trailers = new grpc.Metadata();
  signReply(trailers, SECRET, reply);
  t.ok(replyProved(trailers, SECRET, reply), "the engine's proof of its reply");
  t.notOk(replyProved(trailers, SECRET, { ...reply, nonce: newNonce() }), 'for that call only');
  t.notOk(replyProved(trailers, SECRET, { ...reply, engine: 'engine-b' }), 'from that engine only');
  t.notOk(replyProved(trailers, SECRET, { ...reply, body: bodyHash(Buffer.from('another reply')) }), 'of that reply only');
  t.notOk(replyProved(trailers, SECRET, { ...reply, code: 14, body: '', error: '{"code":"busy"}' }), 'not of an error instead');
  t.notOk(replyProved(undefined, SECRET, reply), 'no trailers');
  const fields = [nonce, ENGINE];
  t.notOk(verifyProof(SECRET, 'api', fields, proofOf(SECRET, 'engine', fields)), "the other side's proof reflected back");
  t.notOk(verifyProof(SECRET, 'api', fields, 42), 'not a string');
});

t.test('the throttle: failures counted per address (an IPv6 host by its /64), in bounded memory', async (t) => {
  t.equal(addressBlock('::ffff:10.0.0.5'), '10.0.0.5', 'IPv4 mapped into IPv6 is the IPv4 address');
  t.equal(addressBlock('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  t.equal(addressBlock('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64', 'the same /64');
  t.equal(addressBlock('2001:db8::5'), '2001:db8::/64');
  const throttle = new FailureThrottle(3, 100);
  const now = 1_000_000;
  for (let i = 0; i < 3; i++) throttle.failed('10.0.0.5', now);
  t.equal(throttle.retryAfter('10.0.0.5', now + 1000), 59, 'past the limit: refused for the rest of its minute');
  t.equal(throttle.retryAfter('10.0.0.6', now + 1000), 0, 'another address is not');
  t.equal(throttle.retryAfter('10.0.0.5', now + 60_000), 0, 'a minute later it may try again');
  const start = process.cpuUsage();
  for (let i = 0; i < 100_000; i++) throttle.failed(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, now + 1000);
  const cpu = process.cpuUsage(start);
  t.equal(throttle.size, 100, 'a hundred thousand addresses: the capacity remembered, no more');
  t.ok(cpu.user + cpu.system < 1_000_000, 'in well under a second of CPU');
});

t.test('with the secret: the facts, scores and counters cross', async (t) => {
  const engine = await listen(t);
  t.match(engine.address, /^tcp:\/\/127\.0\.0\.1:\d+$/);
  const c = channel(t, engine.address);
  t.same(await c.info(5000), INFO);
  t.same(await c.score(REQUEST), RESULT);
  t.same(await c.stats(5000), STATS);
  t.equal(await c.serving(5000), true, 'health');
  t.same(engine.scored, ['state\n'], "scored once: learning the engine's name cost a refusal before the message, not a second score");
  t.same(engine.logs, [], 'learning the name is no fault to log');
});

t.test('a wrong secret is refused, and both ends say why', async (t) => {
  const engine = await listen(t);
  const c = channel(t, engine.address, 'not-the-secret-0123456');
  await t.rejects(c.info(5000), { name: 'EngineError', code: 'unavailable', message: 'the engine refused this node: wrong engine secret' });
  // Its connection is closed with each refusal, so a call that follows at once may find it gone.
  await t.rejects(c.score(REQUEST), { code: 'unavailable' }, 'scoring too');
  t.match(engine.logs.join('\n'), /engine: refused .*127\.0\.0\.1:\d+: wrong engine secret/);
  t.equal(engine.logs.length, 1, 'logged once, not once per call');
  t.same(engine.scored, [], 'nothing scored');
  t.equal(await c.serving(5000), true, 'the health check needs no secret: probes carry none');
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
  const c = channel(t, `tcp://127.0.0.1:${port}`);
  const unproved = { code: 'unavailable', message: /^the engine could not prove its reply/ };
  await t.rejects(c.info(5000), unproved);
  await t.rejects(c.score(REQUEST), unproved, 'its scores are not taken');
});

t.test('a caller that is not an API node is refused; the engine keeps serving others', async (t) => {
  const engine = await listen(t);
  const stranger = new EngineClient(`${engine.host}:${engine.port}`, grpc.credentials.createInsecure());
  t.teardown(() => stranger.close());
  const refused = await new Promise<grpc.ServiceError | null>((resolve) =>
    (stranger as unknown as { score: (...a: unknown[]) => void }).score({}, (err: grpc.ServiceError | null) => resolve(err)),
  );
  t.equal(refused?.code, grpc.status.UNAUTHENTICATED, 'UNAUTHENTICATED');
  t.match(engine.logs.join('\n'), /not an Arbitra API node/);
  t.same(await channel(t, engine.address).score(REQUEST), RESULT, 'the next caller is served');
});

t.test('a recorded call sent again is refused, by its own engine and by another with the same secret', async (t) => {
  const [a, b] = [await listen(t), await listen(t)];
  const recorder = await tamperingProxy(a);
  t.teardown(() => recorder.close());
  t.same(await channel(t, recorder.address).score(REQUEST), RESULT, 'the call, recorded on its way');
  t.same(a.scored, ['state\n']);
  const [recording] = recorder.recorded;
  t.same(await replay(recording!, a), { answered: false }, 'sent again to its engine: refused');
  t.same(await replay(recording!, b), { answered: false }, 'sent to a second engine of the same secret: refused');
  t.same([a.scored, b.scored], [['state\n'], []], 'neither scored it again');
});

t.test('a message altered on the way is refused before it is scored', async (t) => {
  const engine = await listen(t);
  const altered = { n: 0 };
  const proxy = await tamperingProxy(engine, { call: (p) => replaceAll(p, Buffer.from('state'), Buffer.from('scrap'), altered) });
  t.teardown(() => proxy.close());
  await t.rejects(channel(t, proxy.address).score(REQUEST), {
    code: 'unavailable',
    message: 'the engine refused this node: the message is not the one its proof covers',
  });
  t.ok(altered.n > 0, 'the message was altered');
  t.same(engine.scored, [], 'the altered message was never scored');
});

t.test('a reply altered on the way is refused by the caller', async (t) => {
  const engine = await listen(t);
  const [from, to] = [Buffer.alloc(8), Buffer.alloc(8)];
  from.writeDoubleLE(RESULT.branches[0]![0]!);
  to.writeDoubleLE(-0.01);
  const altered = { n: 0 };
  const proxy = await tamperingProxy(engine, { reply: (p) => replaceAll(p, from, to, altered) });
  t.teardown(() => proxy.close());
  await t.rejects(channel(t, proxy.address).score(REQUEST), { code: 'unavailable', message: /^the engine could not prove its reply/ });
  t.ok(altered.n > 0, 'the score was altered');
});

t.test('an unproven call of 200 MB is refused without being read', async (t) => {
  const engine = await listen(t);
  const before = process.memoryUsage().rss;
  const call = await hugeCall(engine, 200_000_000);
  const grown = process.memoryUsage().rss - before;
  t.equal(call.status, grpc.status.UNAUTHENTICATED, 'refused');
  t.ok(call.bytesTaken < 1 << 20, `the engine took ${call.bytesTaken} bytes of it before closing the connection`);
  t.ok(grown < 64 << 20, `memory grew by ${(grown / 2 ** 20).toFixed(1)} MiB, not by the message`);
  t.same(engine.scored, []);
  t.same(await channel(t, engine.address).score(REQUEST), RESULT, 'callers with the secret are served on');
});

t.test('a request larger than an engine takes is refused by its caller, before it is sent', async (t) => {
  const engine = await listen(t);
  const huge = { ...REQUEST, prefix: 'a'.repeat(MAX_MESSAGE_BYTES) };
  await t.rejects(channel(t, engine.address).score(huge), {
    code: 'context_exceeded',
    message: /^the request is 64 MiB, more than an engine takes \(64 MiB\)/,
  });
  t.same(engine.scored, []);
});

t.test('calls at once on one connection are bounded before any is proved', async (t) => {
  const engine = await listen(t);
  const flood = await streamFlood(engine, MAX_CONCURRENT_STREAMS * 2);
  t.ok(flood.refused > 0, `${flood.refused} of ${MAX_CONCURRENT_STREAMS * 2} refused by HTTP/2 past the limit of ${MAX_CONCURRENT_STREAMS}`);
  t.equal(flood.open, 0, 'none held open');
  // The flood's calls were failed proofs too, so its address is throttled now.
  const elsewhere = await tamperingProxy({ ...engine, localAddress: '127.0.0.2' });
  t.teardown(() => elsewhere.close());
  t.same(await channel(t, elsewhere.address).score(REQUEST), RESULT, 'callers with the secret are served on');
});

t.test('failed proofs are throttled per address: refused unchecked, while other addresses are served', async (t) => {
  const engine = await listen(t);
  // Each call on a connection of its own: the engine closes a connection whose caller failed.
  const signed = (secret: string): Record<string, string> => {
    const md = new grpc.Metadata();
    signCall(md, secret, { method: METHOD, engine: '', body: Buffer.alloc(0) });
    return md.toHttp2Headers() as Record<string, string>;
  };
  for (let i = 0; i < 20; i++) {
    t.same(
      await rawCall(engine, signed('a-guessed-secret-0123456')),
      { status: grpc.status.UNAUTHENTICATED, message: 'wrong engine secret' },
      `guess ${i + 1}`,
    );
  }
  t.match(await rawCall(engine, signed('a-guessed-secret-0123456')), { message: /^too many failed proofs from 127\.0\.0\.1; try again in \d+ s$/ }, 'the 21st');
  t.match(await rawCall(engine, signed(SECRET)), { message: /^too many failed proofs/ }, 'the right secret from that address too, unchecked');
  t.same(
    await rawCall(engine, signed(SECRET), '127.0.0.2'),
    { status: grpc.status.UNAUTHENTICATED, message: 'the call is meant for another engine' },
    'the right secret from another address is checked (and told the name of the engine it reached)',
  );
  t.equal(engine.logs.filter((l) => /wrong engine secret/.test(l)).length, 1, 'the guesses are logged once');
});

t.test('connections: bounded per address, and closed when they prove nothing for a while', async (t) => {
  const engine = await listen(t, { bounds: { connections: 8, perAddress: 2, proveWithinMs: 300 } });
  const order: number[] = [];
  const sockets = [0, 1, 2].map((i) =>
    net
      .connect(engine.port, engine.host)
      .on('error', () => {})
      .on('close', () => order.push(i)),
  );
  await Promise.all(sockets.map((s) => new Promise((r) => s.once('close', r))));
  t.same(order.slice(0, 1), [2], 'a third from one address is closed first, as it comes');
  t.same(order.slice(1).sort(), [0, 1], 'the two within the bound are closed once they have proved nothing for a while');
  const proxy = await tamperingProxy(engine);
  t.teardown(() => proxy.close());
  const c = channel(t, proxy.address);
  t.same(await c.score(REQUEST), RESULT);
  await new Promise((r) => setTimeout(r, 900));
  t.same(await c.score(REQUEST), RESULT);
  t.equal(proxy.recorded.length, 1, 'a proven connection stays: both calls on one');
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
  const engine = await listen(t, { tls: { cert: fs.readFileSync(cert), key: fs.readFileSync(key) } });
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
  const guessing = openEngineChannel(engine.address, { secret: 'not-the-secret-0123456', ca: fs.readFileSync(cert) });
  t.teardown(() => guessing.close());
  await t.rejects(guessing.info(5000), { message: 'the engine refused this node: wrong engine secret' }, 'a wrong secret over TLS is refused, and says so');
  t.same(await trusted.score(REQUEST), RESULT, 'the node with the secret is served on');
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

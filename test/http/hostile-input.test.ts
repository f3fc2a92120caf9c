// Hostile input against the assembled application on both transports, real LMDB and a real (small)
// model: bodies nested past the depth limit, bytes that are not UTF-8, lone surrogates, question
// names of every odd kind, over-long path ids and a user creating keys without end. Each is a 4xx
// in the documented shape; none reaches a 500.
import t, { type Test } from 'tap';
import fs from 'node:fs';
import { createApp, createAppDeps } from '../../src/app.js';
import { loadConfig, storeOptions } from '../../src/config.js';
import { createLocalEngine } from '../../src/engine/local.js';
import { MAX_JSON_DEPTH, TOO_DEEP } from '../../src/api/json-guard.js';
import { startHttpServer } from '../../src/http/server.js';
import type { HttpImplementation } from '../../src/api/route.js';
import { localMetricsText } from '../../src/metrics/cluster.js';
import { openStore } from '../../src/store/index.js';
import { CHAT_MODEL } from '../helpers/models.js';
import { describeFront } from '../../src/http/front.js';

const CONSOLE_TOKEN = 'hostile-input-console-token';
const MAX_KEYS = 3;

interface Reply {
  status: number;
  json: any;
}

const skip = !fs.existsSync(CHAT_MODEL) && 'the small chat model is not downloaded';
const engine = skip ? null : await createLocalEngine(CHAT_MODEL, { contextSize: 2048, maxSequences: 8 });
t.teardown(() => engine?.close());

async function serve(t: Test, impl: HttpImplementation) {
  const dir = t.testdir();
  const config = loadConfig(['--data-dir', dir, '--port', '0'], {
    ARBITRA_CONSOLE_TOKEN: CONSOLE_TOKEN,
    ARBITRA_MAX_KEYS_PER_USER: String(MAX_KEYS),
    ARBITRA_IP_LIMIT_PER_MINUTE: '10000',
  });
  const store = await openStore(dir, storeOptions(config));
  const deps = createAppDeps(config, {
    engine: engine!,
    engines: () => [{ engine: 0, device: null, status: 'ready', determinism: null, kernelPath: null }],
    store,
    workers: 1,
    httpFront: () => describeFront(impl),
    metricsText: localMetricsText,
    log: () => {},
  });
  const server = await startHttpServer({ host: '127.0.0.1', port: 0, handler: createApp(deps), prefer: impl });
  t.teardown(async () => {
    await server.close();
    await store.close();
  });
  const { secret } = await store.keys.create('owner@example.com');
  const base = `http://127.0.0.1:${server.port}`;
  const call = async (method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}): Promise<Reply> => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: typeof body === 'string' || body === undefined ? body : new Uint8Array(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
  };
  return { call, decide: (body: string | Buffer, headers?: Record<string, string>) => call('POST', '/v1/systemone', body, headers) };
}

/** `inner` wrapped in `levels` arrays, as JSON text. */
const nested = (levels: number, inner = '"x"') => '['.repeat(levels) + inner + ']'.repeat(levels);

/** The one json_invalid item of a 422. */
function jsonInvalid(t: Test, reply: Reply, what: string): { loc: (string | number)[]; ctx: { error: string } } {
  t.equal(reply.status, 422, `${what}: 422`);
  t.equal(reply.json?.detail?.length, 1, `${what}: one item`);
  t.match(reply.json.detail[0], { type: 'json_invalid', msg: 'JSON decode error', loc: ['body'] }, `${what}: json_invalid`);
  return reply.json.detail[0];
}

function multipart(request: string): { body: Buffer; headers: Record<string, string> } {
  const boundary = 'hostile-boundary';
  const body = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="request"\r\nContent-Type: application/json\r\n\r\n${request}\r\n--${boundary}--\r\n`,
  );
  return { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

for (const impl of ['uws', 'node'] as HttpImplementation[]) {
  t.test(`hostile input on ${impl}`, { skip }, async (t) => {
    const { call, decide } = await serve(t, impl);

    t.test('nesting is bounded at the documented depth, wherever it is', async (t) => {
      // The body is level 1 and the state level 2, so a state of MAX_JSON_DEPTH - 1 arrays is the deepest allowed.
      const deepest = await decide(`{"state":${nested(MAX_JSON_DEPTH - 1)},"questions":{"q":{}}}`);
      t.equal(deepest.status, 200, 'a body exactly at the limit is answered');
      const over = jsonInvalid(t, await decide(`{"state":${nested(MAX_JSON_DEPTH)},"questions":{"q":{}}}`), 'one level more');
      t.equal(over.ctx.error, TOO_DEEP);
      t.same(over.loc.slice(0, 3), ['body', 'state', 0], 'the loc walks down to the offending array');
      t.equal(over.loc.length, MAX_JSON_DEPTH + 1);

      jsonInvalid(t, await decide(`{"state":${nested(10_000)},"questions":{"q":{}}}`), 'a state 10,000 deep');
      const instructions = jsonInvalid(
        t,
        await decide(`{"state":"s","questions":{"q":{"instructions":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}}}`),
        'instructions 10,000 deep',
      );
      t.same(instructions.loc.slice(0, 5), ['body', 'questions', 'q', 'instructions', 'a']);
      const malformed = jsonInvalid(t, await decide(`{"state":${'['.repeat(100_000)}`), 'a malformed body 100,000 deep');
      t.match(malformed, { loc: ['body', 9 + MAX_JSON_DEPTH - 1], ctx: { error: TOO_DEEP } }, 'the scanner that explains it stops at the limit too');
      jsonInvalid(t, await call('POST', '/v1/waitlist', `{"email":"a@b.io","use_case":${nested(10_000)}}`), 'the waitlist');
      jsonInvalid(t, await call('POST', '/v1/traces', nested(10_000, '{}')), 'traces');
      jsonInvalid(t, await decide(multipart(`{"state":${nested(10_000)},"questions":{"q":{}}}`).body, multipart('').headers), 'a multipart request part');
    });

    t.test('bytes that are not UTF-8 and lone surrogates are json_invalid', async (t) => {
      const bytes = Buffer.concat([Buffer.from('{"state":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('","questions":{"q":{}}}')]);
      t.same(jsonInvalid(t, await decide(bytes), 'invalid UTF-8').loc, ['body']);
      const encodedSurrogate = Buffer.concat([Buffer.from('{"state":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('","questions":{"q":{}}}')]);
      jsonInvalid(t, await decide(encodedSurrogate), 'a surrogate encoded as UTF-8');
      const value = jsonInvalid(t, await decide('{"state":"a\\ud800b","questions":{"q":{}}}'), 'a lone surrogate in a value');
      t.same(value.loc, ['body', 'state']);
      const key = jsonInvalid(t, await decide('{"state":"s","questions":{"q":{"criteria":{"\\udc00":"x"}}}}'), 'a lone surrogate in a member name');
      t.same(key.loc, ['body', 'questions', 'q', 'criteria'], 'located at the object that holds the name');
      jsonInvalid(t, await decide('{"state":"s","questions":{"\\ud800":{}}}'), 'a lone surrogate in a question name');
      const form = multipart('{"state":"\\udfff","questions":{"q":{}}}');
      t.same(jsonInvalid(t, await decide(form.body, form.headers), 'a multipart request part').loc, ['body', 'state']);
      jsonInvalid(t, await call('POST', '/v1/waitlist', '{"email":"a@b.io","use_case":"\\ud83d is half an emoji"}'), 'the waitlist');
      const pair = await decide('{"state":"\\ud83d\\ude00 a whole emoji","questions":{"q":{}}}');
      t.equal(pair.status, 200, 'a surrogate pair is a character like any other');
    });

    t.test('every question name is validated or answered', async (t) => {
      const names = ['a\nb', 'nul\u0000', '__proto__', '', 'n'.repeat(10_000), 'tab\there', '/~0~1'];
      for (const name of names) {
        const reply = await decide(`{"state":"x","questions":{${JSON.stringify(name)}:true}}`);
        t.equal(reply.status, 422, `${JSON.stringify(name.slice(0, 12))} with a value that is not a question`);
        t.same(
          reply.json.detail.map((d: any) => [d.type, d.loc]),
          [['dict_type', ['body', 'questions', name]]],
        );
      }
      const bad = await decide(`{"state":"x","questions":{"a\\nb":{"type":"choice","criteria":{"x\\ny":5,"z":null}}}}`);
      t.equal(bad.status, 422, 'a criteria label with a line break is checked too');
      t.match(bad.json.detail[0], { loc: ['body', 'questions', 'a\nb', 'criteria', 'x\ny'] });

      const questions = `{${names.map((n) => `${JSON.stringify(n)}:{"instructions":"Is it?"}`).join(',')}}`;
      const answered = await decide(`{"state":"It is.","questions":${questions}}`);
      t.equal(answered.status, 200, 'the same names with real questions are answered');
      t.same(Object.keys(answered.json.answers).sort(), [...names].sort(), 'each under its own name');
      t.ok(Object.hasOwn(answered.json.answers, '__proto__') && answered.json.answers.__proto__.type === 'noul', '__proto__ is an answer, not a prototype');

      const empty = await decide('{"state":"x","questions":{}}');
      t.equal(empty.status, 422, 'no questions never reach the engine');
      t.same(
        empty.json.detail.map((d: any) => [d.type, d.loc]),
        [['too_short', ['body', 'questions']]],
      );
    });

    t.test('path ids are bounded before the store sees them', async (t) => {
      for (const [path, name] of [
        ['/v1/retention/', 'request_id'],
        ['/v1/console/api-keys/', 'key_id'],
      ] as const) {
        const headers = { 'x-arbitra-console-token': CONSOLE_TOKEN, 'x-arbitra-user-email': 'owner@example.com' };
        for (const length of [2_000, 4_000]) {
          const long = await call('DELETE', path + 'i'.repeat(length), undefined, headers);
          t.equal(long.status, 422, `${name} of ${length} characters`);
          t.equal(long.json.detail.length, 1);
          t.match(long.json.detail[0], { type: 'string_too_long', loc: ['path', name], ctx: { max_length: 200 } });
        }
        const wide = await call('DELETE', path + encodeURIComponent('\u{1F600}'.repeat(150)), undefined, headers);
        t.equal(wide.status, 422, `${name} of 300 UTF-16 units, 600 bytes`);
        const longest = await call('DELETE', path + 'i'.repeat(200), undefined, headers);
        t.equal(longest.status, 404, `${name} of 200 characters is looked up, and found missing`);
        t.equal(longest.json.detail.error_type, 'not_found');
      }
    });

    t.test(`a user holds at most ${MAX_KEYS} active keys, also when creating them at once`, async (t) => {
      const me = { 'x-arbitra-console-token': CONSOLE_TOKEN, 'x-arbitra-user-email': `keys-${impl}@example.com` };
      const create = () => call('POST', '/v1/console/api-keys', '{}', me);
      const replies = await Promise.all(Array.from({ length: MAX_KEYS * 3 }, create));
      const created = replies.filter((r) => r.status === 200);
      t.equal(created.length, MAX_KEYS, 'exactly the limit is created');
      for (const r of replies.filter((r) => r.status !== 200)) {
        t.equal(r.status, 409);
        t.equal(r.json.detail.error_type, 'conflict');
        t.match(r.json.detail.message, `at most ${MAX_KEYS} active API keys`);
        t.equal(r.json.detail.max_keys_per_user, MAX_KEYS);
      }
      t.equal((await call('DELETE', `/v1/console/api-keys/${created[0]!.json.id}`, undefined, me)).status, 200);
      t.equal((await create()).status, 200, 'a revoked key frees its place');
      t.equal((await create()).status, 409);
    });
  });
}

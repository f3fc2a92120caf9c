// The third party's official Python client (typesafe-sdk, pinned with its dependencies in
// test/integration/python/requirements.txt and installed into .venv-sdk/ by scripts/python-sdk.mjs,
// which `npm test` runs before tap) pointed at `arbitra serve`, unmodified. Each subtest runs one
// scenario of test/integration/python/sdk_driver.py, which prints what the client returned or
// raised and what it put on the wire; the asserts are here.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { TEST_MODEL_ID } from '../helpers/models.js';
import { PYTHON, root, venvMissing, withoutTypesafeEnv } from './helpers/python.js';
import { cannotRun, metricValue, startServer, type Server } from './helpers/server.js';

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const DRIVER = path.join(root, 'test', 'integration', 'python', 'sdk_driver.py');
const ALIASES = ['jev-latest', 'jev-preview', 'default'];
const run = promisify(execFile);

const sum = (o: Record<string, number>): number => Object.values(o).reduce((a, b) => a + b, 0);

/** Runs one driver scenario as a user would: the client configured by TYPESAFE_BASE_URL and TYPESAFE_API_KEY. */
async function drive(server: Server, key: string, scenario: string): Promise<any> {
  const env = withoutTypesafeEnv();
  env.TYPESAFE_BASE_URL = server.url;
  env.TYPESAFE_API_KEY = key;
  const { stdout } = await run(PYTHON, [DRIVER, scenario], { env, maxBuffer: 16 << 20 });
  const result = JSON.parse(stdout);
  if (result.crash) throw new Error(`sdk_driver.py ${scenario} crashed:\n${result.crash}`);
  const broken = scoreChecks(result).filter((c) => !c.holds);
  if (broken.length > 0) throw new Error(`sdk_driver.py ${scenario}: score is not Σ i·pᵢ in ${JSON.stringify(broken)}`);
  return result;
}

/** Every score answer the client parsed anywhere in a scenario's result, checked against Σ i·pᵢ by the driver. */
function scoreChecks(node: unknown): { name: string; holds: boolean }[] {
  if (node === null || typeof node !== 'object') return [];
  const own = Array.isArray((node as any).score_checks) ? (node as any).score_checks : [];
  return [...own, ...Object.values(node).flatMap(scoreChecks)];
}

/** A call the client returned from, with the status the server sent. */
function succeeded(t: TapTest, call: any): void {
  t.ok(call.ok, `answered (${call.ok ? call.status : `${call.error}: ${call.message}`})`);
  t.equal(call.status, 200);
  t.match(call.request_id, /\S/, 'result.request_id, from x-typesafe-request-id');
}

/** What every error the client raises from our reply must carry. */
function raised(t: TapTest, call: any, status: number, error: string, message: string | RegExp): void {
  t.notOk(call.ok, `refused (${call.ok ? 'answered 200' : call.status})`);
  t.equal(call.status, status);
  t.equal(call.error, error);
  t.match(call.message, message, `message: ${call.message}`);
  t.match(call.request_id, /\S/, 'error.request_id, from x-typesafe-request-id');
  t.ok(String(call.message).endsWith(`(request_id=${call.request_id})`), 'str(error) ends with the request id');
}

/** Every numeric leaf of `b` within `tolerance` of `a`'s, and every other leaf equal. */
function close(t: TapTest, a: unknown, b: unknown, tolerance: number, where = 'answers'): void {
  if (typeof a === 'number' && typeof b === 'number') {
    t.ok(Math.abs(a - b) <= tolerance, `${where}: ${a} vs ${b}`);
  } else if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    t.same(Object.keys(b), Object.keys(a), `${where}: the same keys`);
    for (const k of Object.keys(a)) close(t, (a as any)[k], (b as any)[k], tolerance, `${where}.${k}`);
  } else {
    t.equal(b, a, where);
  }
}

/** The pydantic-style detail entries of a 422 body. */
const details = (call: any): { loc: (string | number)[]; msg: string; type: string }[] => (Array.isArray(call.body?.detail) ? call.body.detail : []);

if (cannotRun) {
  t.plan(0, cannotRun);
} else if (venvMissing()) {
  t.fail(venvMissing()!);
} else {
  t.test('one server, every feature the client has', async (t) => {
    const server = await startServer(t.testdir(), { workers: 2 });
    t.teardown(() => server.stop());
    const { secret } = await server.createKey('python-sdk@example.com');

    t.test('decides every question type in one call', async (t) => {
      const { call } = await drive(server, secret, 'every_type');
      succeeded(t, call);
      t.equal(call.model, TEST_MODEL_ID, 'jev-latest, the client default, is served by the served model');
      t.match(call.request_id, /^so_/);
      t.equal(call.request_id, call.raw.id, 'the request id is the response id');
      t.same(call.nouls, ['billing']);
      t.same(call.choices, ['tone', 'topic']);
      t.same(call.scores, ['urgency']);
      t.same(call.boxes, []);
      t.ok(call.usage.input_tokens > 0 && call.usage.output_tokens > 0, `usage ${JSON.stringify(call.usage)}`);

      const { billing, topic, tone, urgency } = call.answers;
      t.ok(billing.noul >= 0 && billing.noul <= 1, `noul ${billing.noul}`);
      const choices: [any, string[]][] = [
        [topic, ['billing', 'technical', 'other']],
        [tone, ['angry', 'calm']],
      ];
      for (const [choice, labels] of choices) {
        t.same(Object.keys(choice.probabilities), labels, 'keyed by label, in the order sent');
        t.ok(Object.values(choice.probabilities as Record<string, number>).every((p) => p >= 0 && p <= 1));
        t.ok(Math.abs(sum(choice.probabilities) - 1) < 1e-6, 'probabilities sum to 1');
        t.ok(labels.includes(choice.choice));
        t.ok(choice.confidence >= 0 && choice.confidence <= 1);
      }
      t.same(urgency.legend, { 0: 'not urgent', 1: 'somewhat urgent', 2: 'very urgent' });
      t.same(Object.keys(urgency.probabilities), ['0', '1', '2']);
      t.ok(Math.abs(sum(urgency.probabilities) - 1) < 1e-6, 'probabilities sum to 1');
      t.ok(urgency.score >= 0 && urgency.score <= 2, `score ${urgency.score}`);
      t.same(
        call.score_checks.map((c: any) => [c.name, c.holds]),
        [['urgency', true]],
        'the driver checked score = Σ i·pᵢ on the score answer the client parsed',
      );
      t.ok(urgency.confidence >= 0 && urgency.confidence <= 1);
      // The client's typed answers hold what the server sent, field for field.
      for (const [name, typed] of Object.entries<Record<string, unknown>>(call.answers)) {
        for (const [field, value] of Object.entries(typed)) t.same(value, call.raw.answers[name][field], `${name}.${field}`);
      }
    });

    t.test('lists the served model and its aliases', async (t) => {
      const { call } = await drive(server, secret, 'models');
      succeeded(t, call);
      t.same(
        call.models.map((m: any) => m.name),
        [TEST_MODEL_ID, ...ALIASES],
      );
      for (const m of call.models) {
        t.match(m.description, /\S/, `${m.name} has a description`);
        t.match(m.release_date, /^\d{4}-\d{2}-\d{2}$/, `${m.name} has a YYYY-MM-DD release date`);
      }
    });

    t.test('forwards debias options and returns raw probabilities', async (t) => {
      const { call } = await drive(server, secret, 'debias');
      succeeded(t, call);
      const raw = call.raw.answers;
      for (const name of ['billing', 'topic', 'urgency']) t.equal(raw[name].debias_passes, 2, `${name}: two passes averaged`);
      t.ok(raw.billing.raw_noul >= 0 && raw.billing.raw_noul <= 1, `raw_noul ${raw.billing.raw_noul}`);
      for (const name of ['topic', 'urgency']) {
        t.same(Object.keys(raw[name].raw_probabilities ?? {}), Object.keys(raw[name].probabilities), `${name}: raw keyed like probabilities`);
        t.ok(Math.abs(sum(raw[name].raw_probabilities ?? {}) - 1) < 1e-6, `${name}: raw probabilities sum to 1`);
      }
    });

    t.test('accepts a zstd-compressed body and answers it as the uncompressed one', async (t) => {
      const { zstd, plain } = await drive(server, secret, 'compression');
      t.equal(zstd.exchanges[0].content_encoding, 'zstd', 'the client compressed the body by default');
      t.equal(plain.exchanges[0].content_encoding, null, 'compression=False sends it as is');
      t.ok(plain.exchanges[0].body_bytes >= 1024, `over the client's 1 KiB threshold (${plain.exchanges[0].body_bytes} bytes)`);
      t.ok(zstd.exchanges[0].body_bytes < plain.exchanges[0].body_bytes, 'smaller on the wire');
      succeeded(t, zstd);
      succeeded(t, plain);
      if (zstd.ok && plain.ok) close(t, plain.raw.answers, zstd.raw.answers, 1e-6);
    });

    t.test('returns score levels given as objects and arrays exactly as sent', async (t) => {
      const { criteria, call } = await drive(server, secret, 'score_objects');
      succeeded(t, call);
      const legend = Object.fromEntries(criteria.map((c: unknown, i: number) => [String(i), c]));
      t.same(call.raw.answers.urgency.legend, legend, 'on the wire');
      t.same(call.answers.urgency.legend, legend, "in the client's ScoreAnswer");
      t.ok(Math.abs(sum(call.answers.urgency.probabilities) - 1) < 1e-6);
    });

    t.test('refuses images on a text-only model, in every form the client sends them', async (t) => {
      const calls = await drive(server, secret, 'images');
      for (const form of ['attached', 'placed', 'json']) {
        for (const header of ['off', 'on']) {
          const call = calls[`${form}_${header}`];
          t.test(`${form} image, danger-zone header ${header}`, async (t) => {
            const sent = call.exchanges[0];
            if (form === 'json') {
              t.equal(sent.content_type, 'application/json');
            } else {
              t.match(sent.content_type, /^multipart\/form-data; boundary=/);
              t.same(sent.parts, ['request', 'asset-0'], 'the JSON request part, then the image');
            }
            raised(t, call, 422, 'TypeSafeUnprocessableEntityError', header === 'off' ? 'Arbitra-Danger-Zone-Images: true' : 'cannot read images');
            const asset = details(call).find((d) => d.loc[0] === 'body' && d.loc[1] === 'assets');
            t.ok(asset, `a detail under ["body", "assets"] (${JSON.stringify(call.body)})`);
            if (!asset) return;
            t.equal(asset.loc.length, 3);
            // Where the client sends the image itself it names the asset by its reference, <image:hex>.
            t.match(String(asset.loc[2]), form === 'json' ? /^photo1$/ : /^<image:[0-9a-f]{32}>$/);
            t.match(call.message, String(asset.loc[2]), 'the message names the asset');
          });
        }
      }
    });

    t.test('refuses a box question on a text-only model', async (t) => {
      const calls = await drive(server, secret, 'box');
      for (const form of ['off', 'on', 'json_on']) {
        const call = calls[form];
        t.equal(call.status, 422, `${form}: 422, not ${call.status}: ${call.message}`);
        t.same(
          details(call).filter((d) => d.type === 'literal_error'),
          [],
          `${form}: box is a known question type`,
        );
      }
      // With images switched on, the image is readable input; the question is what this model cannot answer.
      for (const form of ['on', 'json_on']) {
        const call = calls[form];
        raised(t, call, 422, 'TypeSafeUnprocessableEntityError', 'text-only');
        const box = details(call).find((d) => d.loc.join('/') === 'body/questions/dog');
        t.ok(box, `${form}: a detail at ["body", "questions", "dog"] (${JSON.stringify(call.body)})`);
        if (box) t.match(box.msg, 'text-only');
      }
    });

    t.test('surfaces 401, 404 and 422 with their messages and request ids', async (t) => {
      const calls = await drive(server, secret, 'errors');
      raised(t, calls.wrong_key, 401, 'TypeSafeAuthenticationError', /key/i);
      raised(t, calls.wrong_key_models, 401, 'TypeSafeAuthenticationError', /key/i);
      raised(t, calls.unknown_model, 404, 'TypeSafeNotFoundError', '"no-such-model"');
      // The client joins pydantic-style details as "loc: msg" without the leading "body".
      raised(t, calls.one_level, 422, 'TypeSafeUnprocessableEntityError', 'questions.urgency.criteria: ');
    });
  });

  t.test('a server allowing one request per second', async (t) => {
    const server = await startServer(t.testdir(), { workers: 2, env: { ARBITRA_RATE_LIMIT_RPS: '1' } });
    t.teardown(() => server.stop());
    const { secret } = await server.createKey('python-sdk-limits@example.com');

    t.test('without retries the client raises the 429 with its retry delay', async (t) => {
      const { calls } = await drive(server, secret, 'rate_limited');
      const limited = calls.filter((c: any) => !c.ok);
      t.ok(limited.length >= 1, `at least one of ${calls.length} calls in one second is refused`);
      for (const call of limited) {
        raised(t, call, 429, 'TypeSafeRateLimitError', /rate limit/i);
        t.equal(call.body?.detail?.error_type, 'rate_limited');
        t.equal(call.exchanges.length, 1, 'sent once');
        t.ok(call.retry_after_ms > 0, `retry_after_ms ${call.retry_after_ms}`);
        t.equal(call.retry_after_ms, Number(call.exchanges[0].retry_after_ms), 'read from retry-after-ms');
      }
    });

    t.test('with its default retries the client waits as told and succeeds', async (t) => {
      const labels = { route: 'systemone', method: 'POST' };
      const before = await server.call('/metrics');
      const { calls } = await drive(server, secret, 'rate_limited_retried');
      const after = await server.call('/metrics');
      for (const call of calls) succeeded(t, call);
      const retried = calls.filter((c: any) => c.exchanges.length > 1);
      t.ok(retried.length >= 1, 'at least one call was refused and retried');
      for (const call of retried) {
        const refusals = call.exchanges.slice(0, -1);
        t.ok(
          refusals.every((x: any) => x.status === 429 && Number(x.retry_after_ms) > 0),
          'every earlier attempt got a 429 with retry-after-ms',
        );
        t.equal(call.exchanges.at(-1).retry_count, String(refusals.length), 'the last attempt says how many came before');
        const told = refusals.reduce((ms: number, x: any) => ms + Number(x.retry_after_ms), 0);
        t.ok(call.elapsed_s * 1000 >= told, `took ${Math.round(call.elapsed_s * 1000)} ms, told to wait ${told} ms`);
      }
      const attempts = calls.flatMap((c: any) => c.exchanges);
      const delta = (status: string): number =>
        (metricValue(after.text, 'arbitra_http_requests_total', { ...labels, status }) ?? 0) -
        (metricValue(before.text, 'arbitra_http_requests_total', { ...labels, status }) ?? 0);
      t.equal(delta('429'), attempts.filter((x: any) => x.status === 429).length, 'the server counted every refused attempt');
      t.equal(delta('200'), calls.length, 'and one answer per call');
    });
  });
}

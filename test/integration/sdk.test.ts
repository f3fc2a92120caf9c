// The third party's own, unmodified client (@typesafe-ai/sdk, pinned devDependency) pointed at
// `arbitra serve`: a client written for their API must work by changing only the base URL and key.
import t from 'tap';
import { APIError, AuthenticationError, NotFoundError, RateLimitError, TypeSafeClient, UnprocessableEntityError, choice, noul, score } from '@typesafe-ai/sdk';
import { cannotRun, startServer } from './helpers/server.js';

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const MODEL_ID = 'gemma-3-270m-q4_k_m';
// Small enough that the quota 429 costs a handful of decisions; each is counted below.
const DAILY = 4;
const STATE = { document: 'I was charged twice for my subscription. Please fix this ASAP.' };
const sum = (o: Record<string, number>): number => Object.values(o).reduce((a, b) => a + b, 0);

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  const server = await startServer(t.testdir(), { workers: 2, env: { ARBITRA_FREE_DAILY_DECISIONS: String(DAILY) } });
  t.teardown(() => server.stop());
  const { secret } = await server.createKey('sdk@example.com');
  // No retries: a 429 must reach the test as the server sent it. A generous timeout: two shared cores.
  const options = { baseURL: server.url, apiKey: secret, retry: { maxRetries: 0 }, timeout: 120_000, logLevel: 'off' as const };
  const client = new TypeSafeClient(options);
  let decisions = 0;

  /** The rejection of `p`, failing the test when it resolves. */
  async function rejection(t: TapTest, p: Promise<unknown>): Promise<any> {
    try {
      await p;
    } catch (err) {
      return err;
    }
    t.fail('expected the SDK to throw');
    return null;
  }

  /** The reference's score rule, checked on every score answer the client receives. */
  function scoresAreExpectations(t: TapTest, answers: Record<string, { type?: string }>): void {
    for (const [name, a] of Object.entries(answers)) {
      if (a.type !== 'score') continue;
      const { score: s, probabilities } = a as { score: number; probabilities: Record<string, number> };
      const expected = Object.entries(probabilities).reduce((acc, [level, p]) => acc + Number(level) * p, 0);
      t.ok(Math.abs(s - expected) <= 1e-9, `${name}: score ${s} = Σ i·pᵢ = ${expected}`);
    }
  }

  /** What every error the SDK surfaces from us must carry. */
  function surfaced(t: TapTest, err: any, status: number, message: RegExp): void {
    t.ok(err instanceof APIError, `an APIError (${err?.constructor?.name})`);
    t.equal(err.status, status);
    t.match(err.message, message, `message: ${err.message}`);
    t.equal(err.headers.get('x-arbitra-api-version'), '2026-10-12');
    // The SDK reads the request id from x-typesafe-request-id only.
    t.ok(
      typeof err.requestId === 'string' && err.requestId !== '',
      `requestId surfaced (x-typesafe-request-id: ${err.headers.get('x-typesafe-request-id')}, x-request-id: ${err.headers.get('x-request-id')})`,
    );
  }

  t.test('configured from TYPESAFE_BASE_URL and TYPESAFE_API_KEY, decides a noul question', async (t) => {
    const saved = { url: process.env.TYPESAFE_BASE_URL, key: process.env.TYPESAFE_API_KEY };
    process.env.TYPESAFE_BASE_URL = server.url;
    process.env.TYPESAFE_API_KEY = secret;
    t.teardown(() => {
      for (const [name, value] of [
        ['TYPESAFE_BASE_URL', saved.url],
        ['TYPESAFE_API_KEY', saved.key],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });
    const fromEnv = new TypeSafeClient({ retry: { maxRetries: 0 }, timeout: 120_000 });
    t.equal(fromEnv.baseURL, server.url);
    const { data, requestId } = await fromEnv
      .systemOne({ state: STATE, questions: { billing: noul('Is this about billing?', { true: 'about money', false: 'about something else' }) } })
      .withResponse();
    decisions++;
    t.equal(data.model, MODEL_ID, 'jev-latest, the SDK default, is served');
    t.equal(data.answers.billing.type, 'noul');
    t.ok(data.answers.billing.noul >= 0 && data.answers.billing.noul <= 1);
    t.ok(data.usage.input_tokens > 0 && data.usage.output_tokens >= 1);
    t.match(requestId, /^so_/, 'the request id of a success');
    t.equal(requestId, (data as unknown as { id: string }).id, 'the request id is the response id');
  });

  t.test('decides a choice question', async (t) => {
    const res = await client.systemOne({
      state: STATE,
      questions: { category: choice('What is this ticket about?', { billing: 'payments', technical: null, other: null }) },
    });
    decisions++;
    const a = res.answers.category;
    t.equal(a.type, 'choice');
    t.ok(['billing', 'technical', 'other'].includes(a.choice));
    t.same(Object.keys(a.probabilities), ['billing', 'technical', 'other']);
    t.ok(Math.abs(sum(a.probabilities) - 1) < 1e-9);
    t.equal(a.probabilities[a.choice], Math.max(...Object.values(a.probabilities)), 'the choice is the most probable label');
    t.ok(a.confidence >= 0 && a.confidence <= 1);
  });

  t.test('decides a score question', async (t) => {
    const res = await client.systemOne({
      state: STATE,
      questions: { urgency: score('How urgent is this?', ['not urgent', 'somewhat urgent', 'very urgent']) },
    });
    decisions++;
    const a = res.answers.urgency;
    t.equal(a.type, 'score');
    t.same(a.legend, { 0: 'not urgent', 1: 'somewhat urgent', 2: 'very urgent' });
    t.ok(Math.abs(sum(a.probabilities) - 1) < 1e-9);
    scoresAreExpectations(t, res.answers);
    t.ok(a.confidence >= 0 && a.confidence <= 1);
  });

  t.test('decides all three types in one call, with options the SDK forwards', async (t) => {
    const res = await client.systemOne({
      state: STATE,
      questions: {
        billing: noul('Is this about billing?'),
        category: choice('Topic?', { billing: null, technical: null }),
        urgency: score('Urgency?', ['low', 'high']),
      },
      options: { debias: 'permute', debias_passes: 2 },
    } as Parameters<typeof client.systemOne>[0]);
    decisions++;
    t.same(Object.keys(res.answers).sort(), ['billing', 'category', 'urgency']);
    scoresAreExpectations(t, res.answers);
    t.equal((res.answers.category as unknown as { debias_passes: number }).debias_passes, 2, 'options reach the server');
  });

  t.test('lists models', async (t) => {
    const models = await client.models.list();
    t.ok(Array.isArray(models));
    const ids = models.map((m) => (m as unknown as { id: string }).id);
    t.same(ids, [MODEL_ID, 'jev-latest', 'jev-preview', 'default']);
    // The SDK's ModelCard promises name, description and release_date (all strings).
    for (const field of ['name', 'description', 'release_date'] as const) {
      const bad = models.filter((m) => typeof m[field] !== 'string').map((m) => (m as unknown as { id: string }).id);
      t.same(bad, [], `ModelCard.${field} is a string on every model`);
    }
  });

  t.test('surfaces our 401 with its message and request id', async (t) => {
    const wrong = new TypeSafeClient({ ...options, apiKey: 'arb_notARealKey0123456789abcdefghijkl' });
    const err = await rejection(t, wrong.systemOne({ state: 's', questions: { q: noul('Q?') } }));
    t.ok(err instanceof AuthenticationError, 'AuthenticationError');
    surfaced(t, err, 401, /^401 Invalid API key/);
    t.equal(err.body?.detail?.error_type, 'authentication_error');
    const list = await rejection(t, wrong.models.list());
    t.ok(list instanceof AuthenticationError, 'models.list too');
  });

  t.test('surfaces our 422 with its message and request id', async (t) => {
    const err = await rejection(
      t,
      client.systemOne({ state: 's', questions: { pick: choice('Pick one', { only: null }) }, options: { debias_passes: 9 } } as Parameters<
        typeof client.systemOne
      >[0]),
    );
    t.ok(err instanceof UnprocessableEntityError, 'UnprocessableEntityError');
    surfaced(t, err, 422, /^422 /);
    // The SDK joins pydantic-style details as "loc: msg" without the leading "body".
    t.match(err.message, 'options.debias_passes: Input should be less than or equal to 8');
    t.match(err.message, 'questions.pick.criteria: A choice question needs 2 to 255 labels; got 1');
  });

  t.test('surfaces our 404 for a model nobody serves', async (t) => {
    const other = new TypeSafeClient({ ...options, defaultModel: 'jev-ultra' });
    const err = await rejection(t, other.systemOne({ state: 's', questions: { q: noul('Q?') } }));
    t.ok(err instanceof NotFoundError, 'NotFoundError');
    surfaced(t, err, 404, /^404 The model "jev-ultra" is not served here/);
  });

  t.test('surfaces our 429 with its message, request id and retry delay', async (t) => {
    t.equal(decisions, DAILY, 'the daily allowance is used up by the decisions above');
    const err = await rejection(t, client.systemOne({ state: STATE, questions: { q: noul('Is this about billing?') } }));
    t.ok(err instanceof RateLimitError, 'RateLimitError');
    surfaced(t, err, 429, new RegExp(`^429 The free daily allowance of ${DAILY} decisions is used up`));
    t.equal(err.body?.detail?.error_type, 'quota_exceeded');
    const ms = Number(err.headers.get('retry-after-ms'));
    t.equal(err.retryAfterMs, ms, 'the SDK reads retry-after-ms');
    t.ok(ms > 0 && ms <= 86_400_000, 'until midnight UTC');
    t.equal(Number(err.headers.get('retry-after')), Math.ceil(ms / 1000));
  });
}

// POST /v1/systemone and its neighbours over HTTP, against `arbitra serve` with two workers, the
// real engine and the default model. The model is a weak base model: only shapes, sums and
// invariants are asserted, never that an answer is right.
import t from 'tap';
import { cannotRun, metricValue, startServer, type Reply } from './helpers/server.js';

const API_VERSION = '2026-10-12';
const MODEL_ID = 'gemma-3-270m-q4_k_m';
// A small default context limit makes a long-context state cheap to build and to evaluate.
const CONTEXT_TOKENS = 256;

const STATE = 'I was charged twice for my subscription this month. Please fix this now!';
const QUESTIONS = {
  n: { type: 'noul', instructions: 'Is the message about money?', criteria: { true: 'it is about money', false: 'it is not' } },
  y: { type: 'yes_no', instructions: 'Is the customer upset?' },
  c: { type: 'choice', instructions: 'What is the topic?', criteria: { billing: 'payments and invoices', technical: null, other: null } },
  s: { type: 'score', instructions: 'How urgent is it?', criteria: ['low', 'medium', 'high'] },
};
const CHEAP = { state: STATE, questions: { q: { instructions: 'Is this about billing?' } } };

const sum = (o: Record<string, number>): number => Object.values(o).reduce((a, b) => a + b, 0);
const near = (a: number, b: number, eps: number): boolean => Math.abs(a - b) <= eps;
/** The reference choice confidence: how far the top probability stands above uniform. */
const choiceConfidence = (p: number[]): number => (Math.max(...p) - 1 / p.length) / (1 - 1 / p.length);

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  const server = await startServer(t.testdir(), { workers: 2, env: { ARBITRA_CONTEXT_TOKENS: String(CONTEXT_TOKENS), ARBITRA_DETERMINISM_CHECK: 'on' } });
  t.teardown(() => server.stop());
  const alice = await server.createKey('alice@example.com');
  const bob = await server.createKey('bob@example.com');
  const decide = (body: unknown, opts: { key?: string; headers?: Record<string, string> } = {}): Promise<Reply> =>
    server.call('/v1/systemone', { body, key: opts.key ?? alice.secret, headers: opts.headers });

  t.test('every question type and the yes_no alias under every option combination', async (t) => {
    type Combo = { debias: 'off' | 'permute'; debias_passes: number; return_raw_probabilities: boolean; retain: boolean };
    const combos: Combo[] = [];
    for (const debias of ['off', 'permute'] as const)
      for (const debias_passes of [2, 8])
        for (const return_raw_probabilities of [false, true])
          for (const retain of [false, true]) {
            // Off ignores the pass count; one pass count per raw/retain pair keeps it to 12 requests.
            if (debias === 'off' && debias_passes === (retain ? 2 : 8)) continue;
            combos.push({ debias, debias_passes, return_raw_probabilities, retain });
          }
    t.equal(combos.length, 12);

    // Four at a time: the default in-flight limit per key, and the engine batches them.
    const replies: Reply[] = new Array(combos.length);
    let next = 0;
    await Promise.all(
      [0, 1, 2, 3].map(async () => {
        while (next < combos.length) {
          const i = next++;
          replies[i] = await decide({ model: 'jev-latest', state: STATE, questions: QUESTIONS, options: combos[i] });
        }
      }),
    );

    t.equal(server.backend, 'cpu', 'the test machine serves on the CPU');
    const byCombo = new Map<string, any>();
    combos.forEach((o, i) => {
      const r = replies[i]!;
      const name = `${o.debias}/${o.debias_passes}/raw=${o.return_raw_probabilities}/retain=${o.retain}`;
      t.equal(r.status, 200, `${name}: ${r.text.slice(0, 300)}`);
      if (r.status !== 200) return;
      const b = r.json;
      byCombo.set(name, b);
      const permute = o.debias === 'permute';
      const passes = permute ? o.debias_passes : null;

      t.equal(r.headers.get('x-arbitra-api-version'), API_VERSION, `${name}: version header`);
      t.ok(r.headers.get('x-request-id'), `${name}: x-request-id`);
      t.match(b.id, /^so_[0-9a-f]{32}$/, `${name}: id`);
      t.equal(r.headers.get('x-typesafe-request-id'), b.id, `${name}: x-typesafe-request-id is the id`);
      t.equal(b.model, MODEL_ID);
      t.same(Object.keys(b.answers).sort(), ['c', 'n', 's', 'y'], `${name}: one answer per question`);

      for (const q of ['n', 'y']) {
        const a = b.answers[q];
        t.equal(a.type, 'noul', `${name}: ${q} is answered as noul`);
        t.ok(a.noul >= 0 && a.noul <= 1, `${name}: ${q}.noul in [0,1]`);
        t.equal(a.confidence_band, null);
        t.equal(a.debias_passes, passes, `${name}: ${q}.debias_passes echoed`);
        if (o.return_raw_probabilities) {
          t.ok(a.raw_noul >= 0 && a.raw_noul <= 1, `${name}: ${q}.raw_noul`);
          if (permute) t.not(a.raw_noul, a.noul, `${name}: ${q} permute moves noul away from the raw pass`);
          else t.equal(a.raw_noul, a.noul, `${name}: ${q} without permute raw is the answer`);
        } else t.equal(a.raw_noul, null, `${name}: ${q}.raw_noul only on request`);
      }

      const c = b.answers.c;
      t.equal(c.type, 'choice');
      t.same(Object.keys(c.probabilities), ['billing', 'technical', 'other'], `${name}: choice keys in label order`);
      t.ok(near(sum(c.probabilities), 1, 1e-9), `${name}: choice probabilities sum to 1 (${sum(c.probabilities)})`);
      const best = Object.entries(c.probabilities as Record<string, number>).reduce((a, e) => (e[1] > a[1] ? e : a));
      t.equal(c.choice, best[0], `${name}: choice is the argmax`);
      t.ok(c.confidence >= 0 && c.confidence <= 1, `${name}: choice confidence in [0,1]`);
      t.ok(near(c.confidence, choiceConfidence(Object.values(c.probabilities)), 1e-9), `${name}: confidence = (max p - 1/N) / (1 - 1/N)`);
      t.ok(c.label_mass! > 0 && c.label_mass! <= 1, `${name}: label mass in (0, 1]`);
      t.equal(c.confidence_band, null);
      t.equal(c.debias_passes, passes);

      const s = b.answers.s;
      t.equal(s.type, 'score');
      t.same(s.legend, { 0: 'low', 1: 'medium', 2: 'high' }, `${name}: legend maps level index to description`);
      t.same(Object.keys(s.probabilities), ['0', '1', '2'], `${name}: score probabilities keyed like the legend`);
      t.ok(near(sum(s.probabilities), 1, 1e-9), `${name}: score probabilities sum to 1`);
      const levels = Object.values(s.probabilities as Record<string, number>);
      t.ok(
        near(
          s.score,
          levels.reduce((acc, p, i) => acc + i * p, 0),
          1e-9,
        ),
        `${name}: score is Σ i·pᵢ`,
      );
      t.ok(s.score >= 0 && s.score <= 2);
      t.ok(s.confidence >= 0 && s.confidence <= 1);
      t.equal(s.debias_passes, passes);

      for (const [q, a] of [
        ['c', c],
        ['s', s],
      ] as const) {
        if (!o.return_raw_probabilities) {
          t.equal(a.raw_probabilities, null, `${name}: ${q}.raw_probabilities only on request`);
          continue;
        }
        t.same(Object.keys(a.raw_probabilities), Object.keys(a.probabilities), `${name}: ${q} raw keys`);
        t.ok(near(sum(a.raw_probabilities), 1, 1e-9), `${name}: ${q} raw sums to 1`);
        if (permute) {
          const moved = Object.keys(a.probabilities).some((k) => Math.abs(a.probabilities[k] - a.raw_probabilities[k]) > 1e-9);
          t.ok(moved, `${name}: ${q} permute makes debiased differ from raw`);
        } else if (q === 'c') t.same(a.raw_probabilities, a.probabilities, `${name}: ${q} raw equals the answer without permute`);
        else {
          // A score's raw distribution is the one read; the served one is it sharpened by the layout's temperature.
          const raw = Object.values(a.raw_probabilities as Record<string, number>);
          const served = Object.values(a.probabilities as Record<string, number>);
          const top = raw.indexOf(Math.max(...raw));
          t.equal(served.indexOf(Math.max(...served)), top, `${name}: ${q} sharpening keeps the most probable level`);
          t.ok(served[top]! >= raw[top]!, `${name}: ${q} and only raises it (${raw[top]} → ${served[top]})`);
        }
      }

      t.ok(Number.isInteger(b.usage.input_tokens) && b.usage.input_tokens > 0, `${name}: input_tokens > 0`);
      t.ok(Number.isInteger(b.usage.output_tokens) && b.usage.output_tokens >= 4, `${name}: output_tokens >= questions`);
      if (!permute) t.equal(b.usage.output_tokens, 4, `${name}: one answer token per question without permute`);
      t.notOk('cost_eur' in b.usage && b.usage.cost_eur !== null, 'no cost without billing');

      const m = b.meta;
      t.match(m, { model: MODEL_ID, quant_method: 'Q4_K_M', quant_bits: 4, region: 'eu', api_version: API_VERSION, runtime: { backend: server.backend } });
      t.ok(Number.isInteger(m.latency_ms) && m.latency_ms >= 0, `${name}: latency_ms`);
      t.type(m.transparency_notice, 'string');

      if (o.retain) t.match(b.retention, { retained: true, retention_days: 30, region: 'eu' }, `${name}: retention block`);
      else t.equal(b.retention, null, `${name}: not retained`);
    });

    // The unpermuted pass of a permuted request is what an unpermuted request answers. Separate
    // engine batches may round differently, hence the tolerance.
    const plain = byCombo.get('off/2/raw=true/retain=true') ?? byCombo.get('off/8/raw=true/retain=false');
    for (const passes of [2, 8]) {
      const permuted = byCombo.get(`permute/${passes}/raw=true/retain=false`);
      if (!plain || !permuted) continue;
      for (const q of ['c', 's']) {
        for (const k of Object.keys(plain.answers[q].probabilities)) {
          const raw = permuted.answers[q].raw_probabilities[k];
          const off = plain.answers[q].probabilities[k];
          t.ok(near(raw, off, 0.02), `passes ${passes}: ${q}[${k}] raw ${raw} vs unpermuted ${off}`);
        }
      }
      for (const q of ['n', 'y']) {
        t.ok(near(permuted.answers[q].raw_noul, plain.answers[q].noul, 0.02), `passes ${passes}: ${q} raw_noul vs unpermuted noul`);
      }
    }
  });

  t.test('model aliases resolve to the served model; an unknown one is a 404 listing the served models', async (t) => {
    for (const model of ['jev-latest', 'jev-preview', 'default', MODEL_ID, null]) {
      const r = await decide({ ...CHEAP, model });
      t.equal(r.status, 200, `model ${model}`);
      t.equal(r.json?.model, MODEL_ID);
    }
    const r = await decide({ ...CHEAP, model: 'gpt-4o' });
    t.equal(r.status, 404);
    t.equal(r.json.detail.error_type, 'not_found');
    t.same(r.json.detail.available_models, [MODEL_ID, 'jev-latest', 'jev-preview', 'default']);
    t.match(r.json.detail.message, /gpt-4o/);
    for (const name of [MODEL_ID, 'jev-latest', 'jev-preview', 'default']) t.match(r.json.detail.message, name);
  });

  t.test('422 HTTPValidationError on bad bodies', async (t) => {
    const ok = { state: 's', questions: { q: {} } };
    const exact: [string, string, unknown][] = [
      ['malformed JSON', '{"state": ', [{ type: 'json_invalid', loc: ['body', 10], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }]],
      ['empty body', '', [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]],
      [
        'missing state',
        JSON.stringify({ questions: { q: {} } }),
        [{ type: 'missing', loc: ['body', 'state'], msg: 'Field required', input: { questions: { q: {} } } }],
      ],
      ['missing questions', JSON.stringify({ state: 's' }), [{ type: 'missing', loc: ['body', 'questions'], msg: 'Field required', input: { state: 's' } }]],
      ['body is an array', '[]', [{ type: 'dict_type', loc: ['body'], msg: 'Input should be a valid dictionary', input: [] }]],
      [
        'unknown question type',
        JSON.stringify({ state: 's', questions: { q: { type: 'maybe' } } }),
        [
          {
            type: 'literal_error',
            loc: ['body', 'questions', 'q', 'type'],
            msg: "Input should be 'noul', 'yes_no', 'choice', 'score' or 'box'",
            input: 'maybe',
            ctx: { expected: "'noul', 'yes_no', 'choice', 'score' or 'box'" },
          },
        ],
      ],
      [
        'debias_passes 1',
        JSON.stringify({ ...ok, options: { debias_passes: 1 } }),
        [
          {
            type: 'greater_than_equal',
            loc: ['body', 'options', 'debias_passes'],
            msg: 'Input should be greater than or equal to 2',
            input: 1,
            ctx: { ge: 2 },
          },
        ],
      ],
      [
        'debias_passes 9',
        JSON.stringify({ ...ok, options: { debias_passes: 9 } }),
        [{ type: 'less_than_equal', loc: ['body', 'options', 'debias_passes'], msg: 'Input should be less than or equal to 8', input: 9, ctx: { le: 8 } }],
      ],
      [
        'choice with one label',
        JSON.stringify({ state: 's', questions: { q: { type: 'choice', criteria: { only: null } } } }),
        [
          {
            type: 'too_short',
            loc: ['body', 'questions', 'q', 'criteria'],
            msg: 'A choice question needs 2 to 255 labels; got 1',
            input: { only: null },
            ctx: { field_type: 'List', min_length: 2, actual_length: 1 },
          },
        ],
      ],
      [
        'score with 11 levels',
        JSON.stringify({ state: 's', questions: { q: { type: 'score', criteria: Array.from({ length: 11 }, (_, i) => `level ${i}`) } } }),
        [
          {
            type: 'too_long',
            loc: ['body', 'questions', 'q', 'criteria'],
            msg: 'A score question needs 2 to 10 levels; got 11',
            input: Array.from({ length: 11 }, (_, i) => `level ${i}`),
            ctx: { field_type: 'List', max_length: 10, actual_length: 11 },
          },
        ],
      ],
      [
        'two bad options at once',
        JSON.stringify({ ...ok, options: { return_raw_probabilities: 'yes', retain: 3 } }),
        [
          {
            type: 'bool_parsing',
            loc: ['body', 'options', 'return_raw_probabilities'],
            msg: 'Input should be a valid boolean, unable to interpret input',
            input: 'yes',
          },
          { type: 'bool_type', loc: ['body', 'options', 'retain'], msg: 'Input should be a valid boolean', input: 3 },
        ],
      ],
    ];
    // [name, body, type of the first error, its loc]
    const shaped: [string, unknown, string, (string | number)[]][] = [
      ['questions not an object', { state: 's', questions: 'x' }, 'dict_type', ['body', 'questions']],
      ['no questions', { state: 's', questions: {} }, 'too_short', ['body', 'questions']],
      ['question not an object', { state: 's', questions: { q: 5 } }, 'dict_type', ['body', 'questions', 'q']],
      ['debias_passes a word', { ...ok, options: { debias_passes: 'four' } }, 'int_parsing', ['body', 'options', 'debias_passes']],
      ['debias_passes fractional', { ...ok, options: { debias_passes: 2.5 } }, 'int_from_float', ['body', 'options', 'debias_passes']],
      ['unknown debias', { ...ok, options: { debias: 'random' } }, 'literal_error', ['body', 'options', 'debias']],
      ['options not an object', { ...ok, options: 'fast' }, 'dict_type', ['body', 'options']],
      [
        'duplicate choice labels',
        { state: 's', questions: { q: { type: 'choice', criteria: ['a', 'a'] } } },
        'value_error',
        ['body', 'questions', 'q', 'criteria'],
      ],
      ['choice without criteria', { state: 's', questions: { q: { type: 'choice' } } }, 'too_short', ['body', 'questions', 'q', 'criteria']],
      ['noul criteria a string', { state: 's', questions: { q: { criteria: 'yes means yes' } } }, 'dict_type', ['body', 'questions', 'q', 'criteria']],
      ['model a number', { ...ok, model: 42 }, 'string_type', ['body', 'model']],
      ['state a number', { state: 5, questions: { q: {} } }, 'string_type', ['body', 'state']],
      [
        'yes_no with a score criteria list',
        { state: 's', questions: { q: { type: 'yes_no', criteria: ['a', 'b'] } } },
        'dict_type',
        ['body', 'questions', 'q', 'criteria'],
      ],
    ];
    t.ok(exact.length + shaped.length >= 15, `${exact.length + shaped.length} distinct bad bodies`);

    const check = (name: string, r: Reply): void => {
      t.equal(r.status, 422, `${name}: ${r.text.slice(0, 200)}`);
      t.equal(r.headers.get('content-type'), 'application/json', `${name}: JSON`);
      t.ok(Array.isArray(r.json?.detail) && r.json.detail.length > 0, `${name}: detail is a non-empty list`);
      for (const d of r.json?.detail ?? []) {
        t.ok(Array.isArray(d.loc) && d.loc[0] === 'body', `${name}: loc starts at body`);
        t.type(d.msg, 'string');
        t.type(d.type, 'string');
      }
    };
    for (const [name, body, detail] of exact) {
      const r = await server.call('/v1/systemone', { method: 'POST', body, key: alice.secret, headers: { 'content-type': 'application/json' } });
      check(name, r);
      t.same(r.json?.detail, detail, `${name}: exact detail`);
    }
    for (const [name, body, type, loc] of shaped) {
      const r = await decide(body);
      check(name, r);
      t.equal(r.json?.detail?.[0]?.type, type, `${name}: type`);
      t.same(r.json?.detail?.[0]?.loc, loc, `${name}: loc`);
    }

    const plain = await server.call('/v1/systemone', { body: JSON.stringify(ok), key: alice.secret, headers: { 'content-type': 'text/plain' } });
    t.equal(plain.status, 415, 'wrong content type');
    t.match(plain.json, { detail: { error_type: 'unsupported_media_type', content_type: 'text/plain' } });
    const huge = await decide({ state: 'x'.repeat(1024 * 1024 + 10), questions: { q: {} } });
    t.equal(huge.status, 413, 'a body over the limit');
    t.equal(huge.json?.detail?.error_type, 'payload_too_large');
  });

  t.test('a state over the default context limit is a 422 unless a long-context header lifts it', async (t) => {
    const long = { state: Array.from({ length: 150 }, (_, i) => `item${i}`).join(' '), questions: { q: { instructions: 'Is this a list?' } } };
    const refused = await decide(long);
    t.equal(refused.status, 422);
    const d = refused.json.detail[0];
    t.equal(d.type, 'value_error');
    t.same(d.loc, ['body', 'state']);
    t.match(d.msg, new RegExp(`exceeds the default limit of ${CONTEXT_TOKENS} prompt tokens`));
    t.match(d.msg, 'Arbitra-Danger-Zone-Long-Context');
    for (const header of ['Arbitra-Danger-Zone-Long-Context', 'TypeSafe-Danger-Zone-Long-Context']) {
      const r = await decide(long, { headers: { [header]: 'true' } });
      t.equal(r.status, 200, `${header}: ${r.text.slice(0, 200)}`);
      t.ok(r.json?.usage?.input_tokens > CONTEXT_TOKENS, `${header}: more prompt tokens than the default limit (${r.json?.usage?.input_tokens})`);
    }
    const off = await decide(long, { headers: { 'Arbitra-Danger-Zone-Long-Context': 'false' } });
    t.equal(off.status, 422, 'a header saying false does not opt in');
  });

  t.test('images are refused without the images header and, with it, because the model is text-only', async (t) => {
    const body = {
      state: [
        { type: 'text', text: 'What is on the picture?' },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
      ],
      questions: { q: {} },
    };
    const without = await decide(body);
    t.equal(without.status, 422);
    t.same(without.json.detail[0].loc, ['body', 'state', 1]);
    t.match(without.json.detail[0].msg, 'Arbitra-Danger-Zone-Images');
    for (const header of ['Arbitra-Danger-Zone-Images', 'TypeSafe-Danger-Zone-Images']) {
      const r = await decide(body, { headers: { [header]: 'true' } });
      t.equal(r.status, 422, header);
      t.match(r.json.detail[0].msg, /text-only and cannot read images/, header);
    }
    const dataUrl = await decide({ state: 'data:image/png;base64,iVBORw0KGgo=', questions: { q: {} } });
    t.equal(dataUrl.status, 422, 'a data: image URL is an image too');
  });

  t.test('401 for a missing, malformed, unknown or revoked key', async (t) => {
    const expect401 = (name: string, r: Reply): void => {
      t.equal(r.status, 401, name);
      t.equal(r.json?.detail?.error_type, 'authentication_error', name);
      t.type(r.json?.detail?.message, 'string');
    };
    expect401('missing', await server.call('/v1/systemone', { body: CHEAP }));
    expect401('not bearer', await server.call('/v1/systemone', { body: CHEAP, headers: { authorization: `Basic ${alice.secret}` } }));
    expect401('unknown', await server.call('/v1/systemone', { body: CHEAP, key: 'arb_thisKeyDoesNotExist0123456789abcdef' }));
    expect401(
      'another key with one character changed',
      await server.call('/v1/systemone', { body: CHEAP, key: alice.secret.slice(0, -1) + (alice.secret.endsWith('a') ? 'b' : 'a') }),
    );

    const temp = await server.createKey('carol@example.com', 'temp');
    t.equal((await server.call('/v1/models', { key: temp.secret })).status, 200, 'the new key works');
    await server.revokeKey(temp.id);
    for (let i = 0; i < 4; i++) expect401(`revoked (${i})`, await server.call('/v1/systemone', { body: CHEAP, key: temp.secret, fresh: true }));
    expect401('revoked on /v1/models', await server.call('/v1/models', { key: temp.secret }));
    expect401('models without a key', await server.call('/v1/models'));
  });

  t.test('Idempotency-Key replays the same bytes; a different body is a 409', async (t) => {
    const idem = `idem-${Date.now()}`;
    const body = { state: STATE, questions: { q: { instructions: 'Is a refund requested?' } }, options: { retain: false } };
    const first = await decide(body, { headers: { 'Idempotency-Key': idem } });
    t.equal(first.status, 200);
    t.equal(first.headers.get('idempotent-replayed'), null, 'the first call is not a replay');
    for (let i = 0; i < 3; i++) {
      const again = await server.call('/v1/systemone', { body, key: alice.secret, headers: { 'Idempotency-Key': idem }, fresh: true });
      t.equal(again.status, 200);
      t.equal(again.text, first.text, `replay ${i} is byte-identical`);
      t.equal(again.json.id, first.json.id);
      t.equal(again.headers.get('x-typesafe-request-id'), first.json.id);
      t.equal(again.headers.get('idempotent-replayed'), 'true');
    }
    const reordered = await decide({ options: body.options, questions: body.questions, state: body.state }, { headers: { 'Idempotency-Key': idem } });
    t.equal(reordered.text, first.text, 'the same body with its members in another order is the same request');

    const conflict = await decide({ ...body, state: 'something else' }, { headers: { 'Idempotency-Key': idem } });
    t.equal(conflict.status, 409);
    t.equal(conflict.json.detail.error_type, 'conflict');
    t.equal(conflict.json.detail.idempotency_key, idem);

    const otherKey = await decide(body, { key: bob.secret, headers: { 'Idempotency-Key': idem } });
    t.equal(otherKey.status, 200);
    t.not(otherKey.json.id, first.json.id, 'idempotency keys are per API key');
  });

  t.test('retention: the block, a stable pseudonym, and deletion by the owning key only', async (t) => {
    const body = { ...CHEAP, options: { retain: true } };
    const before = Date.now();
    const a = await decide(body);
    const b = await decide(body);
    const other = await decide(body, { key: bob.secret });
    for (const r of [a, b, other]) t.equal(r.status, 200);
    const ra = a.json.retention;
    t.match(ra, { retained: true, retention_days: 30, region: 'eu' });
    const until = Date.parse(ra.retention_until);
    const month = 30 * 86_400_000;
    t.ok(until >= before + month - 1000 && until <= Date.now() + month + 1000, `retention_until ${ra.retention_until} is now + 30 days`);
    t.type(ra.pseudonym_id, 'string');
    t.equal(b.json.retention.pseudonym_id, ra.pseudonym_id, 'the pseudonym is stable for one key');
    t.not(other.json.retention.pseudonym_id, ra.pseudonym_id, 'another key has another pseudonym');
    t.not(ra.pseudonym_id, alice.id, 'the pseudonym is not the key id');

    const del = (id: string, key: string) => server.call(`/v1/retention/${id}`, { method: 'DELETE', key });
    const byOther = await del(a.json.id, bob.secret);
    t.equal(byOther.status, 404, 'another key cannot delete it');
    t.equal(byOther.json.detail.error_type, 'not_found');
    const byOwner = await del(a.json.id, alice.secret);
    t.equal(byOwner.status, 200);
    t.same(byOwner.json, { id: a.json.id, deleted: true });
    t.equal((await del(a.json.id, alice.secret)).status, 404, 'a second delete finds nothing');
    t.equal((await del(b.json.id, alice.secret)).status, 200, 'the other retained request is still there');

    const notRetained = await decide(CHEAP);
    t.equal(notRetained.json.retention, null);
    t.equal((await del(notRetained.json.id, alice.secret)).status, 404, 'a request without retain was not kept');
    t.equal((await server.call(`/v1/retention/${other.json.id}`, { method: 'DELETE' })).status, 401, 'deletion needs a key');
  });

  t.test('GET /v1/models, /health and /openapi.json', async (t) => {
    const models = await server.call('/v1/models', { key: alice.secret });
    t.equal(models.status, 200);
    const body = models.json;
    t.equal(body.object, 'list');
    t.ok(Array.isArray(body.data) && Array.isArray(body.models));
    t.same(body.models, body.data, 'the SDK reads models, the spec data: the same list');
    t.same(
      body.data.map((m: any) => m.id),
      [MODEL_ID, 'jev-latest', 'jev-preview', 'default'],
    );
    for (const m of body.data) {
      t.match(m, { object: 'model', owned_by: 'arbitra' });
      t.ok(Number.isInteger(m.max_context_tokens) && m.max_context_tokens >= CONTEXT_TOKENS, `${m.id}: max_context_tokens ${m.max_context_tokens}`);
    }

    const health = await server.call('/health');
    t.equal(health.status, 200);
    t.match(health.json, { status: 'ok', api_version: API_VERSION, model: { id: MODEL_ID, loaded: true }, workers: 2 });
    // The engine's check at load, through the primary to every worker: the promise held here.
    t.match(health.json.engines, [{ engine: 0, status: 'ready', kernels: 'exact', deterministic: true, max_difference: 0 }]);
    t.notOk('kernels_note' in health.json.engines[0], 'it serves the kernels asked for');
    t.equal(health.headers.get('x-arbitra-api-version'), API_VERSION);

    const doc = await server.call('/openapi.json');
    t.equal(doc.status, 200);
    t.match(doc.json.openapi, /^3\.1\./);
    t.ok(doc.json.paths['/v1/systemone']?.post, 'documents POST /v1/systemone');
    for (const p of ['/v1/models', '/health', '/metrics', '/v1/retention/{request_id}']) t.ok(doc.json.paths[p], `documents ${p}`);
  });

  t.test('/metrics aggregates every worker and the engine', async (t) => {
    // Decisions ran above, so the engine has evaluated tokens; the first scrape must say so.
    const first = await server.call('/metrics');
    t.equal(first.status, 200);
    t.equal(metricValue(first.text, 'arbitra_engine_up'), 1, 'engine up');
    t.ok((metricValue(first.text, 'arbitra_engine_tokens_evaluated_total') ?? 0) > 0, 'tokens evaluated are counted on the first scrape after decisions');
    t.ok((metricValue(first.text, 'arbitra_engine_branches_scored_total') ?? 0) > 0, 'branches scored are counted on the first scrape after decisions');
    t.ok((metricValue(first.text, 'arbitra_engine_decode_seconds_total') ?? 0) > 0, 'time in llama_decode is counted');
    t.ok((metricValue(first.text, 'arbitra_engine_readout_seconds_total') ?? 0) > 0, 'time reading log-probs out is counted');
    t.ok((metricValue(first.text, 'arbitra_http_requests_total', { route: 'systemone', status: '200' }) ?? 0) >= 12, 'systemone 200s are counted');

    // Fresh connections spread over both workers (health names the answering pid); every one of
    // them must show up in the aggregated counters, whichever worker is scraped.
    const before422 = metricValue(first.text, 'arbitra_http_requests_total', { route: 'systemone', status: '422' }) ?? 0;
    const pids = new Set<number>();
    let healthCalls = 0;
    const healthBefore = metricValue(first.text, 'arbitra_http_requests_total', { route: '/health' }) ?? 0;
    for (let i = 0; i < 40 && (pids.size < 2 || i < 10); i++) {
      const h = await server.call('/health', { fresh: true });
      healthCalls++;
      pids.add(h.json.pid);
      await server.call('/v1/systemone', { body: '{', key: alice.secret, fresh: true });
    }
    t.equal(pids.size, 2, 'requests landed on both workers');
    const after = await server.call('/metrics', { fresh: true });
    t.equal(
      metricValue(after.text, 'arbitra_http_requests_total', { route: '/health' }),
      healthBefore + healthCalls,
      `all ${healthCalls} health calls counted`,
    );
    t.equal(metricValue(after.text, 'arbitra_http_requests_total', { route: 'systemone', status: '422' }), before422 + healthCalls, 'all 422s counted');
    t.ok((metricValue(after.text, 'arbitra_engine_tokens_evaluated_total') ?? 0) > 0, 'tokens evaluated on a later scrape');
    t.match(after.text, /arbitra_http_request_duration_seconds_bucket\{[^}]*route="systemone"/, 'latency histogram per route');
  });
}

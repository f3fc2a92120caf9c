// What the third party's clients send beyond plain JSON questions, against `arbitra serve` with
// its default settings: image assets as a multipart form or as base64 JSON (always a 422 that
// names the image on this text-only model, never an answer that ignored it), box questions,
// score criteria as objects and arrays, and the 30,000-token state the spec promises without any
// opt-in header. The other long input it promises, a 255-option choice, jevcompat.test sends against
// the same default lanes and limits (its choice-options case, 2 to 255 options with descriptions,
// each answer's keys, sum, argmax and confidence checked), so it is not sent again here.
import t from 'tap';
import { cannotRun, startServer } from './helpers/server.js';

// A 1×1 PNG, as bytes: the signature and an IHDR chunk are all the server looks at.
const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8cfc0f01f0005000201a5d4e0cd0000000049454e44ae426082',
  'hex',
);
const REF = '<image:5f1c0d9e2b7a4c3e8d6f0a1b2c3d4e5f>';

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  const server = await startServer(t.testdir(), { workers: 2, lanes: 'default' });
  t.teardown(() => server.stop());
  const { secret } = await server.createKey('dropin@example.com');

  /** The form the Python client sends: the JSON as part "request", each image as part "asset-N". */
  async function multipart(json: unknown, images: Buffer[], headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
    const boundary = 'a3f0c2b1d4e5f60718293a4b5c6d7e8f';
    const part = (name: string, type: string, data: Buffer): Buffer[] => [
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${name === 'request' ? '' : `; filename="${name}"`}\r\nContent-Type: ${type}\r\n\r\n`,
      ),
      data,
      Buffer.from('\r\n'),
    ];
    const body = Buffer.concat([
      ...part('request', 'application/json', Buffer.from(JSON.stringify(json))),
      ...images.flatMap((img, i) => part(`asset-${i}`, 'image/png', img)),
      Buffer.from(`--${boundary}--\r\n`),
    ]);
    const res = await fetch(`${server.url}/v1/systemone`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': `multipart/form-data; boundary=${boundary}`, ...headers },
      body,
    });
    return { status: res.status, json: await res.json() };
  }

  const decide = (body: unknown, headers: Record<string, string> = {}) => server.call('/v1/systemone', { key: secret, body, headers });

  t.test('a multipart form with an image: 422 naming the asset, with or without the opt-in header', async (t) => {
    const json = {
      state: `Photo: ${REF}`,
      questions: { damaged: { instructions: 'Is the product damaged?' } },
      assets: { [REF]: { type: 'image', part: 'asset-0' } },
    };
    const without = await multipart(json, [PNG]);
    t.equal(without.status, 422, 'never a 415 and never an answer');
    t.same(without.json.detail[0].loc, ['body', 'assets', REF]);
    t.match(without.json.detail[0].msg, /send the header Arbitra-Danger-Zone-Images: true/);
    for (const header of ['Arbitra-Danger-Zone-Images', 'TypeSafe-Danger-Zone-Images']) {
      const r = await multipart(json, [PNG], { [header]: 'true' });
      t.equal(r.status, 422, header);
      t.match(r.json.detail[0].msg, new RegExp(`asset "${REF}" is an image \\(png, ${PNG.length} bytes\\).*cannot read images`), header);
    }
  });

  t.test('a multipart form is validated like JSON: bad parts and bad requests are 422s that say why', async (t) => {
    const stray = await multipart({ state: 'x', questions: { q: {} } }, [PNG]);
    t.equal(stray.status, 422);
    t.same(stray.json.detail[0].loc, ['body', 'asset-0']);
    t.match(stray.json.detail[0].msg, /not used by any asset/);
    const broken = await fetch(`${server.url}/v1/systemone`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'multipart/form-data; boundary=xyz' },
      body: '--xyz\r\nContent-Disposition: form-data; name="request"\r\n\r\n{"state":"x"',
    });
    t.equal(broken.status, 422);
    t.match((await broken.json()).detail[0], { type: 'multipart_invalid', loc: ['body'] });
  });

  t.test('JSON assets: validated first, then refused by name; an unreferenced asset is never ignored', async (t) => {
    const body = { state: 'Photo: photo1', questions: { q: {} }, assets: { photo1: { type: 'image', format: 'png', data_base64: PNG.toString('base64') } } };
    const r = await decide(body, { 'TypeSafe-Danger-Zone-Images': 'true' });
    t.equal(r.status, 422);
    t.same(r.json.detail[0].loc, ['body', 'assets', 'photo1']);
    t.match(r.json.detail[0].msg, /cannot read images/);
    const unreferenced = await decide({ ...body, state: 'no placeholder here' });
    t.equal(unreferenced.status, 422);
    t.match(unreferenced.json.detail[0].msg, /not referenced/);
    const bad = await decide({ ...body, assets: { photo1: { format: 'gif', data_base64: 'AAAA' } } });
    t.equal(bad.status, 422, 'an unknown format is a schema error');
    t.same(bad.json.detail[0].loc.slice(0, 4), ['body', 'assets', 'photo1', 'format']);
  });

  t.test('box questions: in the schema, refused by name on a text-only model', async (t) => {
    const r = await decide({ state: 'a photo of a dog', questions: { dog: { type: 'box', instructions: 'The dog' }, ok: {} } });
    t.equal(r.status, 422);
    t.same(
      r.json.detail.map((d: any) => d.loc),
      [['body', 'questions', 'dog']],
      'only the box question is refused',
    );
    t.match(r.json.detail[0].msg, /text-only/);
    t.notMatch(r.json.detail[0].type, 'literal_error');
  });

  t.test('a score legend carries each level as it was sent', async (t) => {
    const criteria = [{ level: 'low', hint: 'can wait' }, ['this week', 1], 'today'];
    const r = await decide({ state: 'The server room is on fire.', questions: { urgency: { type: 'score', instructions: 'How urgent?', criteria } } });
    t.equal(r.status, 200, r.text);
    t.same(r.json.answers.urgency.legend, { '0': criteria[0], '1': criteria[1], '2': 'today' });
  });

  // Answering a 30,000-token state takes about 100 s here; bench:long answers 2,000 to 30,000 tokens
  // on the same default lanes. The suite holds the parts of the promise one by one: the default
  // limit is all the engine holds (at least 30,000 tokens, no header), and a state longer than the
  // main lane (4,096 cells) is answered by the long lane. That state is just past the main lane (203
  // sentences, 4,116 tokens on the test model): its cost grows with every token, its point does not.
  t.test('a state of 30,000 tokens is within the default limit; one past the main lane is answered, no header needed', async (t) => {
    const sentence = 'Ticket 4471: the customer reports that the replacement blender arrived with a cracked jar. ';
    const question = { damaged: { instructions: 'Did something arrive damaged?' } };
    const models = await server.call('/v1/models', { key: secret });
    const capacity = models.json.data[0].max_context_tokens as number;
    t.ok(capacity >= 30_000, `max_context_tokens ${capacity}`);

    const r = await decide({ state: sentence.repeat(203), questions: question });
    t.equal(r.status, 200, r.text.slice(0, 400));
    t.ok(r.json.usage.input_tokens > 4_096, `input tokens ${r.json.usage.input_tokens}: past the main lane`);

    // Past what the engine holds, the refusal names that limit: the default limit is the capacity.
    const over = await decide({ state: sentence.repeat(Math.ceil((capacity * 1.1) / 17)), questions: question });
    t.equal(over.status, 422, over.text.slice(0, 400));
    t.match(over.json.detail[0].msg, new RegExp(`exceeds the limit of ${capacity} prompt tokens`));
  });
}

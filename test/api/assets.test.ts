// Image assets in a decision request: each rule of validateAssets, and the refusal that names
// every image, on plain values (no server needed).
import t from 'tap';
import { decodeBase64, detectImageFormat, MAX_ASSET_BYTES, refuseImages, validateAssets } from '../../src/api/assets.js';
import { ValidationFailure } from '../../src/api/errors.js';
import type { FormPart } from '../../src/api/multipart.js';
import { TOO_MANY_ERRORS } from '../../src/decision/schema/problems.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]);
const REF = '<image:0123456789abcdef0123456789abcdef>';
const part = (name: string, data: Buffer): [string, FormPart] => [name, { name, filename: name, contentType: 'image/png', data }];

function problems(body: Record<string, unknown>, parts: [string, FormPart][] = []): { type: string; loc: (string | number)[]; msg: string }[] {
  try {
    validateAssets(body, new Map(parts));
  } catch (err) {
    if (err instanceof ValidationFailure) return err.detail;
    throw err;
  }
  return [];
}

t.test('formats are read from the bytes; base64 is strict but takes whitespace and a data: prefix', async (t) => {
  t.equal(detectImageFormat(PNG), 'png');
  t.equal(detectImageFormat(JPEG), 'jpeg');
  t.equal(detectImageFormat(Buffer.from('GIF89a')), null);
  t.same(decodeBase64(PNG.toString('base64')), PNG);
  t.same(decodeBase64(`data:image/png;base64,${PNG.toString('base64').replace(/(.{8})/g, '$1\n')}`), PNG);
  t.equal(decodeBase64('not base64!'), null);
  t.equal(decodeBase64('abc'), null, 'unpadded is not base64');
});

t.test('a valid JSON asset and a valid form part pass, each with its detected format', async (t) => {
  const body = {
    state: `Photo: ${REF} and photo2`,
    questions: { q: { instructions: 'Is it damaged?' } },
    assets: { [REF]: { type: 'image', format: 'jpg', data_base64: PNG.toString('base64') }, photo2: { part: 'asset-0' } },
  };
  const images = validateAssets(body, new Map([part('asset-0', JPEG)]));
  t.same(
    images,
    [
      { name: REF, format: 'png', bytes: PNG.length },
      { name: 'photo2', format: 'jpeg', bytes: JPEG.length },
    ],
    'the declared format is only a hint',
  );
});

t.test('every broken asset is reported at its own loc, all at once', async (t) => {
  const body = {
    state: 'a b c d e <image:missing>',
    questions: { q: { instructions: 'x', criteria: { yes: 'f' } } },
    assets: {
      a: { format: 'png', data_base64: '%%%' },
      b: { data_base64: PNG.toString('base64') },
      c: { format: 'png', data_base64: Buffer.from('GIF89a-not-ours').toString('base64') },
      d: { part: 'asset-9' },
      e: {},
      f: { format: 'png', data_base64: '' },
      unused: { format: 'png', data_base64: PNG.toString('base64') },
    },
  };
  const found = problems(body, [part('asset-0', PNG)]);
  const at = (loc: (string | number)[]): string =>
    found
      .filter((p) => JSON.stringify(p.loc) === JSON.stringify(loc))
      .map((p) => p.msg)
      .join(' | ');
  t.match(at(['body', 'assets', 'a', 'data_base64']), /not valid base64/);
  t.match(at(['body', 'assets', 'b', 'format']), /format is required with data_base64/);
  t.match(at(['body', 'assets', 'c']), /not a PNG or JPEG/);
  t.match(at(['body', 'assets', 'd', 'part']), /no part named "asset-9"/);
  t.match(at(['body', 'assets', 'e']), /needs data_base64/);
  t.match(at(['body', 'assets', 'f']), /empty/);
  t.match(at(['body', 'assets', 'unused']), /not referenced/);
  t.match(at(['body', 'asset-0']), /not used by any asset/);
  t.match(at(['body', 'state']), /placeholder <image:missing> has no asset/);
});

t.test('placeholders are found in instructions and criteria too, and a part belongs to one asset', async (t) => {
  const body = {
    state: 'x',
    questions: { q: { type: 'choice', instructions: ['look at', 'p1'], criteria: { cat: `like ${REF}`, dog: null } } },
    assets: { p1: { part: 'asset-0' }, p2: { part: 'asset-0' } },
  };
  const found = problems(body, [part('asset-0', PNG)]);
  t.ok(
    found.some((p) => p.loc.join('.') === 'body.questions.q.criteria.cat' && /<image:/.test(p.msg)),
    'a placeholder in a criterion without its asset',
  );
  t.ok(found.some((p) => p.loc.join('.') === 'body.assets.p2.part' && /already used by asset "p1"/.test(p.msg)));
  t.notOk(
    found.some((p) => p.loc.join('.') === 'body.assets.p1'),
    'p1 is referenced inside an instructions array',
  );
});

t.test('a part on a JSON request, and the size limit', async (t) => {
  const json = problems({ state: 'p', questions: {}, assets: { p: { part: 'asset-0' } } });
  t.match(json[0]?.msg, /not a multipart\/form-data form/);
  const huge = Buffer.concat([PNG, Buffer.alloc(MAX_ASSET_BYTES)]);
  const big = problems({ state: 'p', questions: {}, assets: { p: { part: 'asset-0' } } }, [part('asset-0', huge)]);
  t.match(big[0]?.msg, new RegExp(`at most ${MAX_ASSET_BYTES}`));
});

t.test('the refusal names every image; it says how to opt in, or that the model cannot read images', async (t) => {
  const images = [{ name: 'photo', format: 'png' as const, bytes: 10 }];
  t.same(refuseImages([], null, true, 'H'), [], 'no images, no refusal');
  const without = refuseImages(images, ['body', 'state', 1], false, 'Arbitra-Danger-Zone-Images');
  t.same(
    without.map((d) => d.loc),
    [
      ['body', 'assets', 'photo'],
      ['body', 'state', 1],
    ],
  );
  t.match(without[0]!.msg, /send the header Arbitra-Danger-Zone-Images: true/);
  const optedIn = refuseImages(images, null, true, 'Arbitra-Danger-Zone-Images');
  t.match(optedIn[0]!.msg, /asset "photo" is an image.*cannot read images/);
});

t.test('worst cases: bounded answers in bounded CPU', async (t) => {
  const KiB = 1024;
  const strings = Array.from({ length: 100_000 }, (_, i) => `s${i}`);
  const cases: [string, Record<string, unknown>, number, (detail: { type: string; msg: string }[]) => void][] = [
    [
      // The case: every asset was searched for in every text, and checked after the count had failed.
      '30,000 empty assets beside a state of 100,000 strings',
      { state: strings, questions: { q: {} }, assets: Object.fromEntries(Array.from({ length: 30_000 }, (_, i) => [`a${i}`, {}])) },
      16 * KiB,
      (detail) =>
        t.same(
          detail.map((d) => d.type),
          ['too_long'],
          'the count alone',
        ),
    ],
    [
      'one placeholder without its asset, written 90,000 times',
      { state: '<image:x> '.repeat(90_000), questions: { q: {} } },
      16 * KiB,
      (detail) => t.equal(detail.length, 1, 'one problem, its text cut'),
    ],
    [
      '100,000 placeholders without their assets',
      { state: Array.from({ length: 100_000 }, (_, i) => `<image:${i}>`), questions: { q: {} } },
      1024 * KiB,
      (detail) => t.equal(detail.at(-1)!.type, TOO_MANY_ERRORS, 'the rest counted'),
    ],
    [
      '16 unreferenced assets with names of 60,000 characters, beside 100,000 strings',
      { state: strings, questions: { q: {} }, assets: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`${i}`.padEnd(60_000, 'n'), { part: 'p' }])) },
      1024 * KiB,
      (detail) => t.same([...new Set(detail.map((d) => d.type))], ['value_error', TOO_MANY_ERRORS], 'as many as fit, the rest counted'),
    ],
  ];
  for (const [what, body, maxBytes, check] of cases) {
    const before = process.cpuUsage();
    const detail = problems(body);
    const bytes = Buffer.byteLength(JSON.stringify({ detail }));
    const used = process.cpuUsage(before);
    const seconds = (used.user + used.system) / 1e6;
    t.ok(bytes < maxBytes, `${what}: ${bytes} bytes`);
    t.ok(seconds < 1, `${what}: ${seconds.toFixed(3)} s of CPU`);
    check(detail);
  }
});

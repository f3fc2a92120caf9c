// Requests a hostile caller can send before any admission: each is within the body limit (1 MiB,
// decoded), and each once made the server answer far more than it was sent, spend seconds of a
// worker's CPU, or lose its answer. The two of issue 50's table come first; the rest were found
// looking for worse. bench:hostile measures them and test/hostile/bounded-requests.test.ts holds
// them on the real server.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { packageRoot } from '../../src/paths.js';
import type { RawRequest } from './raw-http.js';

export interface HostileCase {
  /** What is sent, for a table. */
  name: string;
  request: RawRequest;
  /** Whether it is sent with an API key (the systemone and traces routes take none without). */
  keyed: boolean;
  /** The status a bounded server answers with. */
  expected: number;
}

const JSON_TYPE = { 'content-type': 'application/json' };
const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const gzip = (data: Buffer): Buffer => zlib.gzipSync(data, { level: 9 });
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
const questions = (n: number, question: (i: number) => unknown): Record<string, unknown> => Object.fromEntries(range(n).map((i) => [`q${i}`, question(i)]));
const LABEL = 'L'.repeat(3_400);

function nested(levels: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = { inner: v, beside: 'x' };
  return v;
}

function decision(name: string, body: RawRequest['body'], extra: Partial<RawRequest> = {}, expected = 422): HostileCase {
  return { name, keyed: true, expected, request: { path: '/v1/systemone', headers: JSON_TYPE, body, ...extra } };
}

function gzipped(name: string, value: unknown): HostileCase {
  return decision(name, gzip(json(value)), { headers: { ...JSON_TYPE, 'content-encoding': 'gzip' } });
}

/** A systemone form: a valid request part, then `parts` image parts that no asset names, each named by `name`. */
function unusedParts(parts: number, name: (i: number) => string): Buffer {
  const boundary = 'hostile-boundary';
  const part = (partName: string, data: string): string => `--${boundary}\r\nContent-Disposition: form-data; name="${partName}"\r\n\r\n${data}\r\n`;
  const form = [part('request', JSON.stringify({ state: 's', questions: { q: {} } })), ...range(parts).map((i) => part(name(i), 'x'))];
  return Buffer.from(`${form.join('')}--${boundary}--\r\n`);
}

/** Issue 50's two requests, then the worst cases found since; bodies are built when called. */
export function hostileCases(): HostileCase[] {
  // About the 909 KB: short strings and short names.
  const assetsBody = json({
    state: range(100_000).map((i) => `${i % 1000}`),
    questions: { q: {} },
    assets: Object.fromEntries(range(30_000).map((i) => [`${i}`, {}])),
  });
  const zstdBomb = fs.readFileSync(path.join(packageRoot(), 'test', 'http', 'fixtures', 'encoding', 'bomb-1g.zst'));
  return [
    gzipped('one choice question whose criteria repeat a 3,400-character label 300 times (gzip)', {
      state: 's',
      questions: { q: { type: 'choice', criteria: Array(300).fill(LABEL) } },
    }),
    decision('30,000 empty assets and a state of 100,000 strings', assetsBody),
    gzipped('the same label 250 times, within the count of labels (gzip)', {
      state: 's',
      questions: { q: { type: 'choice', criteria: Array(250).fill(LABEL) } },
    }),
    gzipped('200,000 labels that are not strings (gzip)', { state: 's', questions: { q: { type: 'choice', criteria: Array(200_000).fill(1) } } }),
    decision('80,000 questions, past the cap of 100', json({ state: 's', questions: questions(80_000, () => ({})) })),
    decision(
      'a question name of 900,000 characters over six problems',
      json({ state: 's', questions: { ['Q'.repeat(900_000)]: { type: 'choice', instructions: 5, criteria: 5 } } }),
    ),
    decision('one placeholder without its asset, written 90,000 times', json({ state: '<image:x> '.repeat(90_000), questions: { q: {} } })),
    decision('60,000 placeholders without their assets', json({ state: range(60_000).map((i) => `<image:${i}>`), questions: { q: {} } })),
    decision(
      '16 assets named by 60,000 characters each, none referenced',
      json({ state: 's', questions: { q: {} }, assets: Object.fromEntries(range(16).map((i) => [`${i}`.padEnd(60_000, 'n'), { part: 'p' }])) }),
    ),
    decision('no questions beside a state nested 60 deep around 900,000 characters', json({ state: nested(60, 'y'.repeat(900_000)) })),
    decision('a number of 900,000 digits as a string', json({ state: 's', questions: { q: {} }, options: { debias_passes: '9'.repeat(900_000) } })),
    decision('a model name of 900,000 quotes', json({ model: '"'.repeat(450_000), state: 's', questions: { q: {} } }), {}, 404),
    decision(
      'a form of 63 unused parts, each named by 7,900 characters',
      unusedParts(63, (i) => `${i}`.padEnd(7_900, 'p')),
      { headers: { 'content-type': 'multipart/form-data; boundary=hostile-boundary' } },
    ),
    {
      name: '1,000 traces with seven problems each',
      keyed: true,
      expected: 200,
      request: {
        path: '/v1/traces',
        headers: JSON_TYPE,
        body: json(range(1000).map(() => ({ request_id: 5, question: 5, outcome: {}, observed_at: 5, metadata: 5 }))),
      },
    },
    {
      name: 'a waitlist sign-up of 900,000 characters without its members (no key)',
      keyed: false,
      expected: 422,
      request: { path: '/v1/waitlist', headers: JSON_TYPE, body: json({ pad: 'x'.repeat(900_000) }) },
    },
    {
      name: 'a waitlist sign-up of 500,000 nested arrays (no key)',
      keyed: false,
      expected: 422,
      request: { path: '/v1/waitlist', headers: JSON_TYPE, body: Buffer.from('['.repeat(500_000)) },
    },
    decision('a gzip bomb: 200 MB of zeros', gzip(Buffer.alloc(200_000_000)), { headers: { ...JSON_TYPE, 'content-encoding': 'gzip' } }, 413),
    decision('a zstd bomb: 1 GiB', zstdBomb, { headers: { ...JSON_TYPE, 'content-encoding': 'zstd' } }, 413),
    decision('the 30,000 assets in four layers of gzip', gzip(gzip(gzip(gzip(assetsBody)))), {
      headers: { ...JSON_TYPE, 'content-encoding': 'gzip, gzip, gzip, gzip' },
    }),
    decision('2 MB with a Content-Length', 2_000_000, {}, 413),
    decision('5 MB with a Content-Length', 5_000_000, {}, 413),
    decision('5 MB chunked', 5_000_000, { chunked: true }, 413),
  ];
}

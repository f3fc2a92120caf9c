// decodeZstd on frames from the reference CLI (fixtures/encoding/make.sh) and on frames built here
// byte by byte to reach the cases a compressor never writes: lying headers, huge windows, bombs.
import t, { type Test } from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeZstd } from '../../src/http/zstd.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'encoding');
const fixture = (name: string): Buffer => fs.readFileSync(path.join(dir, name));
const body = fixture('body.json');
const MiB = 1024 * 1024;

const MAGIC = [0x28, 0xb5, 0x2f, 0xfd];

type Block = { raw: Buffer } | { rle: number; size: number };

/**
 * One frame without checksum. `contentSize` is declared in 4 bytes; without it the frame states
 * `windowLog` (default 20: 1 MiB) in its Window_Descriptor.
 */
function frame(blocks: Block[], opts: { contentSize?: number; windowLog?: number } = {}): Buffer {
  const header = opts.contentSize === undefined ? [...MAGIC, 0x00, ((opts.windowLog ?? 20) - 10) << 3] : [...MAGIC, 0xa0, ...le(opts.contentSize, 4)]; // FCS_Field_Size 4, single segment
  const parts: Buffer[] = [Buffer.from(header)];
  blocks.forEach((b, i) => {
    const last = i === blocks.length - 1 ? 1 : 0;
    const [type, size, content] = 'raw' in b ? [0, b.raw.length, b.raw] : [1, b.size, Buffer.from([b.rle])];
    parts.push(Buffer.from(le((size << 3) | (type << 1) | last, 3)), content);
  });
  return Buffer.concat(parts);
}

function le(value: number, bytes: number): number[] {
  return Array.from({ length: bytes }, (_, i) => Math.floor(value / 256 ** i) % 256);
}

function rleBlocks(count: number, size: number): Block[] {
  return Array.from({ length: count }, () => ({ rle: 0x20, size }));
}

function tooLarge(t: Test, fn: () => unknown, what: string): void {
  t.throws(fn, { name: 'RangeError', code: 'ERR_BUFFER_TOO_LARGE' }, what);
}

function corrupt(t: Test, fn: () => unknown, message: RegExp, what: string): void {
  try {
    fn();
    t.fail(`${what}: decoded`);
  } catch (err) {
    t.not((err as { code?: unknown }).code, 'ERR_BUFFER_TOO_LARGE', `${what}: not a size error`);
    t.match((err as Error).message, message, what);
  }
}

/** Peak RSS growth of the process while `fn` runs (ru_maxrss only grows, so this is an upper bound). */
function peakGrowth(fn: () => void): number {
  const before = Math.max(process.resourceUsage().maxRSS * 1024, process.memoryUsage().rss);
  fn();
  return process.resourceUsage().maxRSS * 1024 - before;
}

t.test('what the reference CLI writes decodes to the original', async (t) => {
  t.same(decodeZstd(fixture('body.json.zst'), MiB), body, 'a frame that declares its size');
  t.same(decodeZstd(fixture('body.json.stream.zst'), MiB), body, 'a frame that does not (streamed, window lowered)');
  t.same(decodeZstd(fixture('body.json.multi.zst'), MiB), body, 'two frames with a skippable frame between');
  t.equal(decodeZstd(Buffer.alloc(0), MiB).length, 0, 'no frames, no bytes');
});

t.test('the limit is the decoded size, exact to the byte, in every path', async (t) => {
  for (const name of ['body.json.zst', 'body.json.stream.zst', 'body.json.multi.zst']) {
    t.same(decodeZstd(fixture(name), body.length), body, `${name} at exactly its size`);
    tooLarge(t, () => decodeZstd(fixture(name), body.length - 1), `${name} one byte under`);
  }
});

t.test('a 1 GiB bomb is stopped without expanding', async (t) => {
  for (const name of ['bomb-1g.zst', 'bomb-1g-sized.zst']) {
    const started = performance.now();
    const growth = peakGrowth(() => tooLarge(t, () => decodeZstd(fixture(name), MiB), name));
    t.ok(growth < 64 * MiB, `${name}: peak RSS grew by ${(growth / MiB).toFixed(1)} MiB`);
    t.ok(performance.now() - started < 2000, `${name}: stopped in ${(performance.now() - started).toFixed(0)} ms`);
  }
});

t.test('multi-frame bombs are bounded by the total, not per frame', async (t) => {
  const sized = frame(rleBlocks(8, 128 * 1024), { contentSize: MiB });
  const streamed = frame(rleBlocks(8, 128 * 1024));
  t.equal(decodeZstd(sized, MiB).length, MiB, 'one declared frame fits');
  t.equal(decodeZstd(streamed, MiB).length, MiB, 'one streamed frame fits');
  tooLarge(t, () => decodeZstd(Buffer.concat(Array.from({ length: 1000 }, () => sized)), 8 * MiB), '1000 declared frames of 1 MiB');
  tooLarge(t, () => decodeZstd(Buffer.concat(Array.from({ length: 1000 }, () => streamed)), 8 * MiB), '1000 streamed frames of 1 MiB');
  tooLarge(t, () => decodeZstd(Buffer.concat([sized, frame([{ raw: Buffer.from('x') }])]), MiB), 'a second frame over what is left');
});

t.test('a declared size is refused before any allocation', async (t) => {
  // 2^52 bytes could never be allocated: reaching fzstd at all would throw something else.
  const lie = Buffer.concat([Buffer.from([...MAGIC, 0xe0, ...le(2 ** 52, 8)]), Buffer.from([0x01, 0x00, 0x00])]);
  tooLarge(t, () => decodeZstd(lie, MiB), 'an 8-byte content size of 2^52');
});

t.test('a huge window without a declared size is lowered to the limit', async (t) => {
  // fzstd would allocate the stated 1 GiB window and copy all of it once per block.
  const huge = frame(rleBlocks(8, 128 * 1024), { windowLog: 30 });
  let out: Buffer = Buffer.alloc(0);
  const growth = peakGrowth(() => {
    out = decodeZstd(huge, MiB);
  });
  t.equal(out.length, MiB);
  t.ok(
    out.every((b) => b === 0x20),
    'the content is the run',
  );
  t.ok(growth < 64 * MiB, `peak RSS grew by ${(growth / MiB).toFixed(1)} MiB`);
  const backReference = fixture('body.json.stream.zst');
  t.same(decodeZstd(backReference, body.length), body, 'a real 2 MiB-window frame decodes with its window lowered to 128 KiB');
});

t.test('a streamed frame of many tiny blocks is refused (each block costs a window copy)', async (t) => {
  const tiny = rleBlocks(2000, 1);
  corrupt(t, () => decodeZstd(frame(tiny), MiB), /too many small blocks for its 1048576-byte window/, '2000 one-byte blocks, no declared size');
  t.equal(decodeZstd(frame(tiny, { contentSize: 2000 }), MiB).length, 2000, 'the same blocks under a declared size decode in place');
  t.equal(decodeZstd(frame(rleBlocks(64, 1)), MiB).length, 64, '64 small blocks are fine');
  corrupt(t, () => decodeZstd(frame(rleBlocks(65, 1)), MiB), /too many small blocks/, 'the 65th is not');
  const windowed = frame(rleBlocks(1000, 2048), { windowLog: 17 });
  t.equal(decodeZstd(windowed, 4 * MiB).length, 2000 * 1024, 'a 128 KiB window allows any number of 2 KiB blocks');
  const full = frame(rleBlocks(200, 128 * 1024), { windowLog: 23 });
  t.equal(decodeZstd(full, 32 * MiB).length, 25 * MiB, '200 full blocks under an 8 MiB window');
});

t.test('data that is not valid zstd is an ordinary error naming the fault', async (t) => {
  const good = fixture('body.json.zst');
  corrupt(t, () => decodeZstd(good.subarray(0, good.length - 20), MiB), /truncated/, 'truncated');
  corrupt(t, () => decodeZstd(Buffer.from('{"plain":"json"}'), MiB), /magic/, 'not zstd at all');
  corrupt(t, () => decodeZstd(Buffer.concat([good, Buffer.from('junk!!')]), MiB), /magic/, 'trailing garbage');
  const reservedType = Buffer.from([...MAGIC, 0x00, 0x50, 0x07, 0x00, 0x00]);
  corrupt(t, () => decodeZstd(reservedType, MiB), /reserved block type/, 'block type 3');
  const reservedBit = Buffer.from([...MAGIC, 0x08, 0x50, 0x01, 0x00, 0x00]);
  corrupt(t, () => decodeZstd(reservedBit, MiB), /reserved bit/, 'reserved header bit');
  const dictionary = Buffer.from([...MAGIC, 0x01, 0x50, 0x07, 0x01, 0x00, 0x00]);
  corrupt(t, () => decodeZstd(dictionary, MiB), /dictionary/, 'a dictionary id');
  corrupt(t, () => decodeZstd(frame([{ rle: 1, size: 200 * 1024 }]), 8 * MiB), /exceeds the maximum/, 'a block past 128 KiB');
  corrupt(t, () => decodeZstd(frame([{ raw: Buffer.alloc(100) }], { contentSize: 10 }), MiB), /exceeds the maximum/, 'a block past a single-segment window');
  const skippable = Buffer.from([0x50, 0x2a, 0x4d, 0x18, 0xff, 0x00, 0x00, 0x00]);
  corrupt(t, () => decodeZstd(skippable, MiB), /truncated skippable/, 'a skippable frame longer than the data');
});

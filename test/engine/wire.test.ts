// wire.ts as pure functions: frames split anywhere, several per chunk, the size limit and malformed
// input, and numeric rows that read back bit for bit.
import t from 'tap';
import { encodeFrame, FrameDecoder, FrameError, packRows, unpackRows, type Frame } from '../../src/engine/wire.js';

const readable = (frames: Frame[]) => frames.map((f) => ({ header: f.header, payload: [...f.payload] }));

t.test('a frame round-trips its header and payload', async (t) => {
  const frame = encodeFrame({ t: 'score', id: 7, text: 'naïve ✓' }, Uint8Array.from([1, 2, 3]));
  t.same(readable(new FrameDecoder().push(frame)), [{ header: { t: 'score', id: 7, text: 'naïve ✓' }, payload: [1, 2, 3] }]);
  t.equal(frame.readUInt32LE(0), frame.length - 4, 'the prefix counts the bytes after it');
});

t.test('a frame without payload has an empty one', async (t) => {
  const [frame] = new FrameDecoder().push(encodeFrame({ t: 'cancel', id: 1 }));
  t.equal(frame!.payload.length, 0);
});

t.test('a payload view is encoded from its own bytes only, not its whole buffer', async (t) => {
  const backing = Float64Array.from([1, 2, 3, 4]);
  const [frame] = new FrameDecoder().push(encodeFrame({}, backing.subarray(1, 3)));
  t.same(unpackRows([2], frame!.payload), [[2, 3]]);
});

t.test('frames split at every byte boundary decode the same', async (t) => {
  const stream = Buffer.concat([encodeFrame({ a: 1 }, Uint8Array.from([9, 8])), encodeFrame({ b: 'two' }), encodeFrame({ c: [3] }, Uint8Array.from([7]))]);
  const expected = [
    { header: { a: 1 }, payload: [9, 8] },
    { header: { b: 'two' }, payload: [] },
    { header: { c: [3] }, payload: [7] },
  ];
  for (let cut = 0; cut <= stream.length; cut++) {
    const decoder = new FrameDecoder();
    const got = [...decoder.push(stream.subarray(0, cut)), ...decoder.push(stream.subarray(cut))];
    if (JSON.stringify(readable(got)) !== JSON.stringify(expected)) return t.fail(`split at byte ${cut} decoded differently: ${JSON.stringify(readable(got))}`);
  }
  t.pass(`all ${stream.length + 1} splits decode to the three frames`);
});

t.test('a stream fed one byte at a time yields each frame once it is complete', async (t) => {
  const first = encodeFrame({ n: 1 });
  const stream = Buffer.concat([first, encodeFrame({ n: 2 })]);
  const decoder = new FrameDecoder();
  const seen: number[] = [];
  for (let i = 0; i < stream.length; i++) {
    for (const f of decoder.push(stream.subarray(i, i + 1))) seen.push(i);
  }
  t.same(seen, [first.length - 1, stream.length - 1], 'nothing early, nothing late');
});

t.test('several frames in one chunk all come out, in order', async (t) => {
  const chunk = Buffer.concat(Array.from({ length: 50 }, (_, i) => encodeFrame({ i })));
  t.same(
    new FrameDecoder().push(chunk).map((f) => (f.header as { i: number }).i),
    Array.from({ length: 50 }, (_, i) => i),
  );
});

t.test('a length over the limit is refused as soon as the prefix arrives, before its body', async (t) => {
  const decoder = new FrameDecoder(1024);
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32LE(1025);
  t.throws(() => decoder.push(prefix), { name: 'FrameError', message: 'a frame of 1025 bytes exceeds the limit of 1024 bytes' });
  t.throws(() => decoder.push(encodeFrame({ fine: true })), FrameError, 'the stream stays failed: frame boundaries are lost');
});

t.test('a frame exactly at the limit passes', async (t) => {
  const frame = encodeFrame({}, new Uint8Array(100));
  t.equal(new FrameDecoder(frame.length - 4).push(frame).length, 1);
  t.throws(() => new FrameDecoder(frame.length - 5).push(frame), FrameError);
});

t.test('the encoder refuses a frame over its limit', async (t) => {
  t.throws(() => encodeFrame({}, new Uint8Array(100), 50), { name: 'FrameError', message: /exceeds the limit of 50 bytes/ });
});

t.test('malformed frames are FrameErrors, never other exceptions', async (t) => {
  const frame = (length: number, headerLength: number, rest: Buffer): Buffer => {
    const b = Buffer.alloc(8);
    b.writeUInt32LE(length, 0);
    b.writeUInt32LE(headerLength, 4);
    return Buffer.concat([b, rest]).subarray(0, 4 + length);
  };
  t.throws(() => new FrameDecoder().push(frame(2, 0, Buffer.alloc(0))), { message: /too short/ });
  t.throws(() => new FrameDecoder().push(frame(8, 10, Buffer.from('{}{}'))), { message: /does not fit/ });
  t.throws(() => new FrameDecoder().push(frame(7, 3, Buffer.from('{x}'))), { message: 'a frame header is not JSON' });
});

t.test('rows of doubles come back bit for bit, empty rows included', async (t) => {
  const rows = [[-0.123456789012345, Math.log(1e-300), -Infinity], [], [0, -0, Number.MIN_VALUE, -1e308]];
  const { lengths, values } = packRows(rows);
  t.same(lengths, [3, 0, 4]);
  const [frame] = new FrameDecoder().push(encodeFrame({ lengths }, values));
  const back = unpackRows(lengths, frame!.payload);
  t.ok(
    back.every((row, i) => row.length === rows[i]!.length && row.every((v, j) => Object.is(v, rows[i]![j]))),
    `same values, -0 and -Infinity included: ${JSON.stringify(back)}`,
  );
});

t.test('payloads at every offset of their chunk read back correctly, aligned or not', async (t) => {
  const { lengths, values } = packRows([[1.5, -2.25]]);
  const bytes = Buffer.from(values.buffer);
  for (let offset = 0; offset < 8; offset++) {
    const chunk = Buffer.alloc(offset + bytes.length);
    bytes.copy(chunk, offset);
    t.same(unpackRows(lengths, chunk.subarray(offset)), [[1.5, -2.25]], `payload at byte ${offset}`);
  }
});

t.test('row lengths that do not describe the payload are refused', async (t) => {
  const payload = Buffer.from(Float64Array.from([1, 2]).buffer);
  t.throws(() => unpackRows([3], payload), { name: 'FrameError', message: 'row lengths add up to 3 values, the payload holds 16 bytes' });
  t.throws(() => unpackRows([1, -1, 2], payload), FrameError);
  t.throws(() => unpackRows('2', payload), FrameError);
  t.throws(() => unpackRows([1.5, 0.5], payload), FrameError);
});

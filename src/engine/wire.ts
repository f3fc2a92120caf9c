// Length-prefixed frames for the engine socket. Node's IPC channel JSON-encodes every message, each
// number of a result row included; a frame carries a small JSON header and numeric arrays as raw
// bytes beside it. A stream delivers frames in arbitrary pieces, so the decoder buffers until a
// whole frame is there, and refuses a length past its limit before buffering any of it (a corrupt
// or hostile length must not make the reader allocate gigabytes).
//
// Layout: u32 LE length of what follows | u32 LE header length | header (UTF-8 JSON) | payload

/** Far above any real request (the HTTP body limit is 1 MiB by default); a guard, not a quota. */
export const MAX_FRAME_BYTES = 256 * 1024 * 1024;

const U32 = 4;

export interface Frame {
  header: unknown;
  payload: Buffer;
}

/** The stream is unusable after one: a framing error means the two ends disagree about where frames start. */
export class FrameError extends Error {
  override name = 'FrameError';
}

/** Throws a FrameError when the frame would be larger than `maxBytes`. */
export function encodeFrame(header: object, payload?: ArrayBufferView, maxBytes = MAX_FRAME_BYTES): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const body = payload ? Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength) : Buffer.alloc(0);
  const length = U32 + json.length + body.length;
  if (length > maxBytes) throw new FrameError(`a frame of ${length} bytes exceeds the limit of ${maxBytes} bytes`);
  const out = Buffer.allocUnsafe(U32 + length);
  out.writeUInt32LE(length, 0);
  out.writeUInt32LE(json.length, U32);
  json.copy(out, 2 * U32);
  body.copy(out, 2 * U32 + json.length);
  return out;
}

export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes of the frame being read, its length prefix included; 0 until that prefix has arrived. */
  private expected = 0;
  private failed: FrameError | null = null;

  constructor(private readonly maxBytes = MAX_FRAME_BYTES) {}

  /** Every frame the chunk completes, in order. Throws a FrameError, then again on every later call. */
  push(chunk: Buffer): Frame[] {
    if (this.failed) throw this.failed;
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
    const frames: Frame[] = [];
    try {
      for (;;) {
        if (this.expected === 0) {
          if (this.buffered < U32) break;
          const length = this.first(U32).readUInt32LE(0);
          if (length > this.maxBytes) throw new FrameError(`a frame of ${length} bytes exceeds the limit of ${this.maxBytes} bytes`);
          if (length < U32) throw new FrameError(`a frame of ${length} bytes is too short to hold its header length`);
          this.expected = U32 + length;
        }
        if (this.buffered < this.expected) break;
        const whole = this.take(this.expected);
        this.expected = 0;
        frames.push(parse(whole));
      }
    } catch (err) {
      this.failed = err as FrameError;
      this.chunks = [];
      throw err;
    }
    return frames;
  }

  /** The first chunk, merged with the next ones until it holds at least `n` bytes. */
  private first(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks, this.buffered)];
    return this.chunks[0]!;
  }

  private take(n: number): Buffer {
    const head = this.first(n);
    const rest = head.subarray(n);
    if (rest.length > 0) this.chunks[0] = rest;
    else this.chunks.shift();
    this.buffered -= n;
    return head.subarray(0, n);
  }
}

function parse(frame: Buffer): Frame {
  const headerLength = frame.readUInt32LE(U32);
  const start = 2 * U32;
  if (start + headerLength > frame.length) throw new FrameError(`a frame header of ${headerLength} bytes does not fit its ${frame.length}-byte frame`);
  let header: unknown;
  try {
    header = JSON.parse(frame.toString('utf8', start, start + headerLength));
  } catch {
    throw new FrameError('a frame header is not JSON');
  }
  return { header, payload: frame.subarray(start + headerLength) };
}

/**
 * Rows of numbers as one Float64Array payload and the rows' lengths (for the header). Doubles, so a
 * row reads back exactly as JSON would have carried it; native byte order, since both ends of the
 * socket run on the same machine.
 */
export function packRows(rows: readonly (readonly number[])[]): { lengths: number[]; values: Float64Array } {
  const lengths = rows.map((r) => r.length);
  const values = new Float64Array(lengths.reduce((n, l) => n + l, 0));
  let at = 0;
  for (const row of rows) {
    values.set(row, at);
    at += row.length;
  }
  return { lengths, values };
}

/** The inverse of packRows; a FrameError when `lengths` does not describe `payload`. */
export function unpackRows(lengths: unknown, payload: Buffer): number[][] {
  if (!Array.isArray(lengths) || !lengths.every((l) => Number.isInteger(l) && l >= 0)) throw new FrameError('row lengths must be non-negative integers');
  const count = (lengths as number[]).reduce((n, l) => n + l, 0);
  if (count * Float64Array.BYTES_PER_ELEMENT !== payload.length) throw new FrameError(`row lengths add up to ${count} values, the payload holds ${payload.length} bytes`);
  // A Float64Array view needs 8-byte alignment; a payload inside a larger chunk seldom has it.
  const values =
    payload.byteOffset % Float64Array.BYTES_PER_ELEMENT === 0
      ? new Float64Array(payload.buffer, payload.byteOffset, count)
      : new Float64Array(payload.buffer.slice(payload.byteOffset, payload.byteOffset + payload.length));
  let at = 0;
  return (lengths as number[]).map((l) => Array.from(values.subarray(at, (at += l))));
}

// Bounded zstd decoding (RFC 8878) on top of fzstd, which decodes but trusts the frame: it sizes
// its buffers from the header and, without a declared content size, copies its whole window once
// per block. So every frame is walked here first (header and block headers, no decoding) and
// decoded only within what is left of the output limit:
//   - a frame that declares its content size is refused before any allocation when that size
//     does not fit, and otherwise decoded in place into a buffer of exactly that size;
//   - a frame that does not is streamed and stopped at the first block past the limit, with its
//     window lowered to the limit (no back-reference can reach further than the output allowed)
//     and its window copies held to a multiple of its output, so that memory stays within a few
//     times the limit and time grows linearly with it, however the frame is built.
// Errors mirror zlib's convenience functions: a RangeError with code ERR_BUFFER_TOO_LARGE when the
// output would pass the limit, any other Error for data that is not valid zstd.
import { Decompress, decompress } from 'fzstd';

const FRAME_MAGIC = 0xfd2fb528;
const SKIPPABLE_MAGIC = 0x184d2a50;
const SKIPPABLE_MASK = 0xfffffff0;
/** Block_Maximum_Size's ceiling: no block regenerates more. */
const MAX_BLOCK = 128 * 1024;
/**
 * Bytes fzstd may copy shifting a streamed frame's window, per byte of output and window. A
 * compressor's 128 KiB blocks copy window/128 KiB per byte, so any frame of up to 64 blocks, and
 * any longer one with a window of up to 8 MiB (zstd's levels 1-19), stays within it.
 */
const COPY_FACTOR = 64;

interface Frame {
  kind: 'data';
  start: number;
  end: number;
  /** null when the header does not declare it. */
  contentSize: number | null;
  windowSize: number;
  /** Offset of the Window_Descriptor byte, or -1 for a single-segment frame (which has none). */
  windowDescriptorAt: number;
}

function tooLarge(limit: number): RangeError {
  return Object.assign(new RangeError(`Cannot create a Buffer larger than ${limit} bytes`), { code: 'ERR_BUFFER_TOO_LARGE' });
}

/** Decodes every frame of `data` (skippable frames skipped); throws once the output would exceed `maxOutput`. */
export function decodeZstd(data: Uint8Array, maxOutput: number): Buffer {
  const parts: Uint8Array[] = [];
  let total = 0;
  let at = 0;
  while (at < data.length) {
    const frame = readFrame(data, at);
    at = frame.end;
    if (frame.kind === 'skippable') continue;
    const budget = maxOutput - total;
    if (frame.contentSize !== null && frame.contentSize > budget) throw tooLarge(maxOutput);
    const decoded = frame.contentSize === null ? decodeStreamed(data, frame, budget, maxOutput) : [decodeSized(data, frame)];
    for (const part of decoded) {
      total += part.length;
      parts.push(part);
    }
  }
  return Buffer.concat(parts, total);
}

function decodeSized(data: Uint8Array, frame: Frame): Uint8Array {
  // fzstd treats a declared size of 0 as "unknown" and would allocate the window instead.
  if (frame.contentSize === 0) return new Uint8Array(0);
  return decompress(data.subarray(frame.start, frame.end));
}

function decodeStreamed(data: Uint8Array, frame: Frame, budget: number, maxOutput: number): Uint8Array[] {
  const bytes = data.slice(frame.start, frame.end);
  const lowered = windowFor(Math.max(budget, MAX_BLOCK));
  if (frame.windowSize > lowered.size) bytes[frame.windowDescriptorAt - frame.start] = lowered.descriptor;
  const window = Math.min(frame.windowSize, lowered.size);
  const parts: Uint8Array[] = [];
  let size = 0;
  let copied = 0;
  const stream = new Decompress((chunk) => {
    // An empty block (or the end-of-stream call) shifts nothing, so it costs no window copy.
    if (chunk.length === 0) return;
    size += chunk.length;
    copied += window;
    if (size > budget) throw tooLarge(maxOutput);
    if (copied > COPY_FACTOR * (size + window)) {
      throw new Error(`a frame without a declared content size has too many small blocks for its ${window}-byte window`);
    }
    parts.push(chunk);
  });
  stream.push(bytes, true);
  return parts;
}

/** The smallest window a Window_Descriptor can state (mantissa 0) that holds `bytes`. */
function windowFor(bytes: number): { size: number; descriptor: number } {
  const exponent = Math.max(0, Math.ceil(Math.log2(bytes)) - 10);
  return { size: 2 ** (10 + exponent), descriptor: exponent << 3 };
}

/** The frame at `at`, its extent found by walking its block headers. */
function readFrame(data: Uint8Array, at: number): Frame | { kind: 'skippable'; end: number } {
  if (at + 6 > data.length) throw new Error('truncated frame header');
  const magic = readLE(data, at, 4);
  if ((magic & SKIPPABLE_MASK) >>> 0 === SKIPPABLE_MAGIC) {
    const end = at + 8 + (at + 8 > data.length ? 0 : readLE(data, at + 4, 4));
    if (end > data.length) throw new Error('truncated skippable frame');
    return { kind: 'skippable', end };
  }
  if (magic !== FRAME_MAGIC) throw new Error('unknown frame magic number');
  const descriptor = data[at + 4]!;
  if (descriptor & 0x08) throw new Error('reserved bit set in the frame header');
  const singleSegment = (descriptor & 0x20) !== 0;
  const hasChecksum = (descriptor & 0x04) !== 0;
  const dictionaryBytes = [0, 1, 2, 4][descriptor & 0x03]!;
  const sizeBytes = [singleSegment ? 1 : 0, 2, 4, 8][descriptor >> 6]!;
  let pos = at + 5;
  const windowDescriptorAt = singleSegment ? -1 : pos++;
  if (pos + dictionaryBytes + sizeBytes > data.length) throw new Error('truncated frame header');
  if (readLE(data, pos, dictionaryBytes) !== 0) throw new Error('frames that need a dictionary are not supported');
  pos += dictionaryBytes;
  const contentSize = sizeBytes === 0 ? null : readLE(data, pos, sizeBytes) + (sizeBytes === 2 ? 256 : 0);
  pos += sizeBytes;
  let windowSize: number;
  if (windowDescriptorAt < 0) windowSize = contentSize ?? 0;
  else {
    const wd = data[windowDescriptorAt]!;
    const base = 2 ** (10 + (wd >> 3));
    windowSize = base + (base / 8) * (wd & 7);
  }
  const maxBlock = Math.min(windowSize, MAX_BLOCK);
  for (let last = false; !last; ) {
    if (pos + 3 > data.length) throw new Error('truncated block header');
    const header = readLE(data, pos, 3);
    pos += 3;
    last = (header & 1) === 1;
    const type = (header >> 1) & 3;
    const size = header >>> 3;
    if (type === 3) throw new Error('reserved block type');
    if (size > maxBlock) throw new Error(`block of ${size} bytes exceeds the maximum of ${maxBlock}`);
    pos += type === 1 ? 1 : size;
    if (pos > data.length) throw new Error('truncated block');
  }
  if (hasChecksum) pos += 4;
  if (pos > data.length) throw new Error('truncated content checksum');
  return { kind: 'data', start: at, end: pos, contentSize, windowSize, windowDescriptorAt };
}

/** Little-endian unsigned integer of up to 8 bytes (sizes past 2^53 lose precision but stay huge). */
function readLE(data: Uint8Array, at: number, bytes: number): number {
  let value = 0;
  for (let i = bytes - 1; i >= 0; i--) value = value * 256 + data[at + i]!;
  return value;
}

// Content-Encoding on request bodies (RFC 9110 §8.4). The codings are listed in the order the
// client applied them, so they are undone last first. Every stage's output is bounded by the body
// limit and decoding stops as soon as it would pass it, so a few kilobytes that expand to
// gigabytes never expand in memory.
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { ACCEPTED_CODINGS, type ContentCoding } from '../api/route.js';
import { decodeZstd } from './zstd.js';
/** A body is never layered deeper than this; each layer costs up to a full pass over the limit. */
export const MAX_CODINGS = 4;
const ALIASES: Readonly<Record<string, ContentCoding>> = { 'x-gzip': 'gzip' };

export type ParsedEncoding = { ok: true; codings: ContentCoding[] } | { ok: false; unsupported: string } | { ok: false; tooMany: number };

/** The codings named by a Content-Encoding header, identity dropped; case and whitespace do not matter. */
export function parseContentEncoding(header: string | undefined): ParsedEncoding {
  const codings: ContentCoding[] = [];
  // RFC 9110 §5.6.1: empty list elements are allowed and ignored.
  for (const token of (header ?? '').split(',').map((t) => t.trim().toLowerCase())) {
    if (token === '' || token === 'identity') continue;
    const coding = ALIASES[token] ?? ACCEPTED_CODINGS.find((c) => c === token);
    if (!coding) return { ok: false, unsupported: token };
    codings.push(coding);
  }
  if (codings.length > MAX_CODINGS) return { ok: false, tooMany: codings.length };
  return { ok: true, codings };
}

export class BodyDecodingError extends Error {
  override readonly name = 'BodyDecodingError';
  constructor(
    readonly coding: ContentCoding,
    /** too_large: the decoded body would pass the limit; corrupt: the data is not valid for the coding. */
    readonly reason: 'too_large' | 'corrupt',
    message: string,
  ) {
    super(message);
  }
}

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const brotliDecompress = promisify(zlib.brotliDecompress);

// zlib's async functions run on libuv's threadpool and give up at the first chunk past
// maxOutputLength; zstd is decoded on this thread, bounded the same way (see zstd.ts).
const DECODERS: Readonly<Record<ContentCoding, (data: Buffer, limit: number) => Promise<Buffer>>> = {
  zstd: async (data, limit) => decodeZstd(data, limit),
  gzip: (data, limit) => gunzip(data, { maxOutputLength: limit }),
  // RFC 9110's deflate is the zlib format (RFC 1950), not a bare deflate stream.
  deflate: (data, limit) => inflate(data, { maxOutputLength: limit }),
  br: (data, limit) => brotliDecompress(data, { maxOutputLength: limit }),
};

/** Undoes `codings` (as listed in the header) on `body`; throws BodyDecodingError. */
export async function decodeBody(body: Buffer, codings: readonly ContentCoding[], limit: number): Promise<Buffer> {
  let data = body;
  for (const coding of [...codings].reverse()) {
    try {
      data = await DECODERS[coding](data, limit);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new BodyDecodingError(coding, 'too_large', `decoding ${coding} passed the limit of ${limit} bytes`);
      }
      throw new BodyDecodingError(coding, 'corrupt', (err as Error).message);
    }
  }
  return data;
}

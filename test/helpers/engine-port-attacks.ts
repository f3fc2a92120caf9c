// What an attacker on the network can do to the engine port (`arbitra engine --listen`), with no
// secret: sit between an API node and an engine, recording the calls and rewriting messages on the
// way (`tamperingProxy`, which reads HTTP/2 frames and rewrites DATA payloads in place, the same
// length, as nothing in plain TCP stops it from doing); send a recorded connection again, byte for
// byte, to any engine (`replay`); announce an enormous message without any proof (`hugeCall`); and
// open many calls at once on one connection (`streamFlood`).
// Used by the engine's tests and by bench/engine-port.ts, against this code and older commits alike:
// nothing here depends on how the proofs are made.
import http2 from 'node:http2';
import net from 'node:net';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const DATA = 0x0;
const HEADERS = 0x1;
const RST_STREAM = 0x3;
const END_STREAM = 0x1;
const PADDED = 0x8;

type OnFrame = (frame: { type: number; flags: number; stream: number; payload: Buffer }) => void;

/** Splits a byte stream into HTTP/2 frames, passing each DATA payload through `alter`. */
class FrameStream {
  private pending = Buffer.alloc(0);
  private prefaceLeft: number;

  constructor(
    clientSide: boolean,
    private readonly alter: (payload: Buffer) => Buffer,
    private readonly onFrame: OnFrame = () => {},
  ) {
    this.prefaceLeft = clientSide ? PREFACE.length : 0;
  }

  /** Whole frames of what arrived so far (altered), the rest kept for the next chunk. */
  push(chunk: Buffer): Buffer {
    this.pending = Buffer.concat([this.pending, chunk]);
    const out: Buffer[] = [];
    if (this.prefaceLeft > 0) {
      const n = Math.min(this.prefaceLeft, this.pending.length);
      out.push(this.pending.subarray(0, n));
      this.pending = this.pending.subarray(n);
      this.prefaceLeft -= n;
    }
    while (this.pending.length >= 9) {
      const length = this.pending.readUIntBE(0, 3);
      if (this.pending.length < 9 + length) break;
      const frame = Buffer.from(this.pending.subarray(0, 9 + length));
      this.pending = this.pending.subarray(9 + length);
      if (frame[3] === DATA && length > 0 && !(frame[4]! & PADDED)) {
        const payload = this.alter(frame.subarray(9));
        if (payload.length !== length) throw new Error('a DATA payload must keep its length');
        payload.copy(frame, 9);
      }
      this.onFrame({ type: frame[3]!, flags: frame[4]!, stream: frame.readUInt32BE(5) & 0x7fffffff, payload: frame.subarray(9) });
      out.push(frame);
    }
    return Buffer.concat(out);
  }
}

/** `payload` with every `from` replaced by `to` (the same length); counts each in `count`. */
export function replaceAll(payload: Buffer, from: Buffer, to: Buffer, count: { n: number }): Buffer {
  if (from.length !== to.length) throw new Error('a replacement must keep the length');
  const out = Buffer.from(payload);
  for (let i = out.indexOf(from); i >= 0; i = out.indexOf(from, i + to.length)) {
    to.copy(out, i);
    count.n++;
  }
  return out;
}

export interface TamperingProxy {
  /** tcp://127.0.0.1:PORT, to give a client instead of the engine's address. */
  address: string;
  /** Everything each client connection sent, in order: a recording to replay. */
  recorded: Buffer[];
  close(): void;
}

const same = (payload: Buffer): Buffer => payload;

/**
 * A proxy to the engine at host:port that records what clients send and passes messages through
 * `alter`; it reaches the engine from `localAddress` when given (another loopback address, say).
 */
export function tamperingProxy(
  target: { host: string; port: number; localAddress?: string },
  alter: { call?: (p: Buffer) => Buffer; reply?: (p: Buffer) => Buffer } = {},
): Promise<TamperingProxy> {
  const recorded: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const index = recorded.push(Buffer.alloc(0)) - 1;
    const engine = net.connect({ port: target.port, host: target.host, localAddress: target.localAddress });
    sockets.add(client).add(engine);
    const up = new FrameStream(true, alter.call ?? same);
    const down = new FrameStream(false, alter.reply ?? same);
    client.on('data', (chunk: Buffer) => {
      recorded[index] = Buffer.concat([recorded[index]!, chunk]);
      engine.write(up.push(chunk));
    });
    engine.on('data', (chunk: Buffer) => client.write(down.push(chunk)));
    const end = (): void => {
      client.destroy();
      engine.destroy();
    };
    for (const s of [client, engine]) s.on('error', end).on('close', end);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        address: `tcp://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
        recorded,
        close() {
          for (const s of sockets) s.destroy();
          server.close();
        },
      }),
    ),
  );
}

/**
 * Sends a recorded connection to the engine at host:port, byte for byte, and reads what comes back
 * until every call in it has ended (or the connection has, or `timeoutMs` passed): whether any was
 * answered with a message (a reply's DATA frame), as opposed to refused.
 */
export function replay(recording: Buffer, target: { host: string; port: number }, timeoutMs = 30_000): Promise<{ answered: boolean }> {
  const calls = new Set<number>();
  new FrameStream(true, same, (f) => {
    if (f.type === HEADERS) calls.add(f.stream);
  }).push(recording);
  return new Promise((resolve) => {
    let answered = false;
    const ended = new Set<number>();
    const socket = net.connect(target.port, target.host, () => socket.write(recording));
    const frames = new FrameStream(false, same, (f) => {
      if (f.type === DATA && f.payload.length > 5) answered = true;
      if (((f.type === DATA || f.type === HEADERS) && f.flags & END_STREAM) || f.type === RST_STREAM) ended.add(f.stream);
      if ([...calls].every((c) => ended.has(c))) socket.destroy();
    });
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (chunk: Buffer) => frames.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ answered });
    });
  });
}

/** A Score call opened as a gRPC client would, with `headers` added; its errors and data are let go. */
function scoreStream(session: http2.ClientHttp2Session, headers: Record<string, string> = {}): http2.ClientHttp2Stream {
  const stream = session.request({
    ':method': 'POST',
    ':path': '/arbitra.engine.v1.Engine/Score',
    'content-type': 'application/grpc',
    te: 'trailers',
    ...headers,
  });
  stream.on('error', () => {});
  stream.resume();
  return stream;
}

export interface HugeCallResult {
  /** grpc-status of the answer, null when none came. */
  status: number | null;
  /** From the first byte sent to the answer's headers, or to the connection's end when none came. */
  answeredAfterMs: number;
  /** Bytes of the message the engine took in before it stopped the stream (HTTP/2 flow control acknowledged them). */
  bytesTaken: number;
}

/**
 * A Score call with no proof whose message announces `bytes` bytes and sends them (a ScoreRequest
 * whose prefix is that long, so an engine that reads it all can decode it), 1 MiB at a time, as
 * fast as the engine takes them; `headers` adds metadata (a proof, say).
 */
export async function hugeCall(target: { host: string; port: number }, bytes: number, headers: Record<string, string> = {}): Promise<HugeCallResult> {
  const session = http2.connect(`http://${target.host}:${target.port}`);
  session.on('error', () => {});
  const prefix = bytes - 5 - 1 - 5;
  const head = Buffer.alloc(11);
  head.writeUInt8(0, 0);
  head.writeUInt32BE(bytes - 5, 1);
  head.writeUInt8(0x12, 5); // field 2 (prefix), length-delimited
  // The prefix's length as a varint of 5 bytes: continuation bits set on the first four.
  for (let i = 0, v = prefix; i < 5; i++, v = Math.floor(v / 128)) head.writeUInt8(v % 128 | (i < 4 ? 0x80 : 0), 6 + i);
  const chunk = Buffer.alloc(1 << 20, 0x61);
  const started = Date.now();
  let taken = 0;
  const stream = scoreStream(session, headers);
  const answered = new Promise<{ status: number | null; at: number }>((resolve) => {
    // A refusal comes as headers alone; an answer's status comes in its trailers.
    stream.on('response', (h) => {
      if (h['grpc-status'] !== undefined) resolve({ status: Number(h['grpc-status']), at: Date.now() });
    });
    stream.on('trailers', (h) => resolve({ status: Number(h['grpc-status']), at: Date.now() }));
    stream.on('close', () => resolve({ status: null, at: Date.now() }));
  });
  const send = (async () => {
    stream.write(head);
    for (let left = bytes - head.length; left > 0 && !stream.destroyed; left -= chunk.length) {
      const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
      const more = stream.write(piece, (err) => {
        if (!err) taken += piece.length;
      });
      if (!more) await new Promise((r) => stream.once('drain', r).once('close', r));
    }
    if (!stream.destroyed) stream.end();
  })();
  const { status, at } = await answered;
  await Promise.race([send, new Promise((r) => setTimeout(r, 2000))]);
  session.destroy();
  return { status, answeredAfterMs: at - started, bytesTaken: taken };
}

export interface FloodResult {
  /** Streams HTTP/2 refused outright (RST_STREAM REFUSED_STREAM): past the connection's limit. */
  refused: number;
  /** Streams answered with a gRPC status (a refusal of the call, say). */
  answered: number;
  /** Streams still open when the engine went quiet: held, waiting for a message. */
  open: number;
}

/**
 * Opens `count` Score calls at once on one connection, with no proof and no message, and sees what
 * becomes of each by the time all have closed, or `timeoutMs` has passed (an engine that holds them).
 */
export async function streamFlood(target: { host: string; port: number }, count: number, timeoutMs = 5_000): Promise<FloodResult> {
  // As if the engine had allowed this many: the calls go out in one burst, before its settings arrive.
  const session = http2.connect(`http://${target.host}:${target.port}`, { peerMaxConcurrentStreams: count });
  session.on('error', () => {});
  const result: FloodResult = { refused: 0, answered: 0, open: count };
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    for (let i = 0; i < count; i++) {
      const stream = scoreStream(session);
      stream.on('response', (h) => {
        if (h['grpc-status'] !== undefined) result.answered++;
      });
      stream.on('close', () => {
        if (stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM) result.refused++;
        if (--result.open === 0) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
  });
  const seen = { ...result };
  session.destroy();
  return seen;
}

/** One Score call with an empty message on a connection of its own (from `localAddress` when given): its gRPC status and message. */
export async function rawCall(
  target: { host: string; port: number },
  headers: Record<string, string>,
  localAddress?: string,
): Promise<{ status: number | null; message: string }> {
  const session = http2.connect(`http://${target.host}:${target.port}`, {
    createConnection: () => net.connect({ host: target.host, port: target.port, localAddress }),
  });
  session.on('error', () => {});
  const stream = scoreStream(session, headers);
  stream.end(Buffer.alloc(5));
  const got = await new Promise<{ status: number | null; message: string }>((resolve) => {
    const status = (h: http2.IncomingHttpHeaders): void => {
      if (h['grpc-status'] !== undefined) resolve({ status: Number(h['grpc-status']), message: decodeURIComponent(String(h['grpc-message'] ?? '')) });
    };
    stream.on('response', status).on('trailers', status);
    stream.on('close', () => resolve({ status: null, message: '' }));
  });
  session.destroy();
  return got;
}

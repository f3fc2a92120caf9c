// A remote engine: `arbitra engine --listen HOST:PORT` serves its model to API nodes over TCP (TLS
// when it has a certificate), with the frames of the local engine socket once both ends have proved
// the shared secret (handshake.ts). The engine answers the handshake with its facts, so an API node
// knows the model before it sends anything.
import net from 'node:net';
import tls from 'node:tls';
import { newNonce, proofOf, verifyProof, type HandshakeFrame } from './handshake.js';
import { engineSocket, serveConnection, type EngineSocket, type ServedEngine } from './socket.js';
import type { EngineInfo } from './types.js';
import { encodeFrame, FrameDecoder } from './wire.js';

/** A handshake that has not finished by then is dropped: a port scanner must not hold a connection open. */
const HANDSHAKE_MS = 10_000;
/** Handshake frames are small; a larger one is not a client of ours. */
const HANDSHAKE_FRAME_BYTES = 64 * 1024;

export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
}

export interface EngineListenOptions {
  host: string;
  port: number;
  secret: string;
  tls?: TlsFiles;
}

export interface EngineTcpServer {
  /** tcp://host:port or tls://host:port, the port resolved when 0 was asked. */
  address: string;
  close(): Promise<void>;
}

export interface RemoteEngine extends ServedEngine {
  info(): Promise<EngineInfo>;
}

/** Where an API node finds an engine: a Unix socket path (the local engine) or a remote one. */
export type EngineAddress = { path: string } | { host: string; port: number; tls: boolean };

export function parseEngineAddress(text: string): EngineAddress {
  const m = /^(tcp|tls):\/\/(\[[^\]]+\]|[^:/]+):(\d+)$/.exec(text);
  if (!m) return { path: text };
  return { host: m[2]!.replace(/^\[|\]$/g, ''), port: Number(m[3]), tls: m[1] === 'tls' };
}

export function formatEngineAddress(host: string, port: number, secure: boolean): string {
  return `${secure ? 'tls' : 'tcp'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export async function serveEngineTcp(engine: RemoteEngine, opts: EngineListenOptions, log: (line: string) => void): Promise<EngineTcpServer> {
  const info = await engine.info();
  const onConnection = (conn: net.Socket): void => handshake(conn, engine, info, opts.secret, log);
  const server = opts.tls ? tls.createServer({ cert: opts.tls.cert, key: opts.tls.key, minVersion: 'TLSv1.2' }, onConnection) : net.createServer(onConnection);
  // A client that fails TLS never reaches onConnection; say why once, the client learns it from its own error.
  server.on('tlsClientError', (err: Error) => log(`engine: a TLS handshake failed (${err.message})`));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: opts.host, port: opts.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as net.AddressInfo).port;
  const open = new Set<net.Socket>();
  server.on(opts.tls ? 'secureConnection' : 'connection', (conn: net.Socket) => {
    open.add(conn);
    conn.on('close', () => open.delete(conn));
  });
  return {
    address: formatEngineAddress(opts.host, bound, Boolean(opts.tls)),
    close: () =>
      new Promise<void>((resolve) => {
        for (const conn of open) conn.destroy();
        server.close(() => resolve());
      }),
  };
}

function handshake(conn: net.Socket, engine: RemoteEngine, info: EngineInfo, secret: string, log: (line: string) => void): void {
  const peer = `${conn.remoteAddress}:${conn.remotePort}`;
  const decoder = new FrameDecoder(HANDSHAKE_FRAME_BYTES);
  const nonce = newNonce();
  const timer = setTimeout(() => refuse('no handshake within 10 s'), HANDSHAKE_MS);
  function refuse(reason: string): void {
    clearTimeout(timer);
    log(`engine: refused ${peer}: ${reason}`);
    conn.end(encodeFrame({ t: 'denied', reason } satisfies HandshakeFrame));
    setTimeout(() => conn.destroy(), 1000).unref();
  }
  const onData = (chunk: Buffer): void => {
    let frames;
    try {
      frames = decoder.push(chunk);
    } catch (err) {
      conn.off('data', onData);
      return refuse((err as Error).message);
    }
    if (frames.length === 0) return;
    conn.off('data', onData);
    clearTimeout(timer);
    const hello = frames[0]!.header as HandshakeFrame;
    // The client sends nothing after its hello until it has our welcome.
    if (frames.length > 1) return refuse('frames before the handshake finished');
    if (hello?.t !== 'hello' || typeof hello.nonce !== 'string' || hello.nonce.length < 16) return refuse('not an Arbitra API node');
    if (!verifyProof(secret, 'api', nonce, hello.proof)) return refuse('wrong engine secret');
    conn.write(encodeFrame({ t: 'welcome', proof: proofOf(secret, 'engine', hello.nonce), info } satisfies HandshakeFrame));
    serveConnection(conn, engine, log);
  };
  conn.on('data', onData);
  conn.on('error', () => {});
  conn.on('close', () => clearTimeout(timer));
  conn.write(encodeFrame({ t: 'challenge', nonce } satisfies HandshakeFrame));
}

export interface RemoteEngineTarget {
  host: string;
  port: number;
  secret: string;
  /** TLS to the engine; `ca` trusts a private certificate authority besides the system's. */
  tls?: { ca?: Buffer };
}

export class EngineRefusedError extends Error {
  override name = 'EngineRefusedError';
}

/** Connects and proves the secret both ways; resolves with the scoring socket and the engine's facts. */
export function connectEngineTcp(target: RemoteEngineTarget): Promise<{ socket: EngineSocket; info: EngineInfo }> {
  return new Promise((resolve, reject) => {
    const conn = target.tls
      ? tls.connect({ host: target.host, port: target.port, ca: target.tls.ca, servername: net.isIP(target.host) ? undefined : target.host, minVersion: 'TLSv1.2' })
      : net.createConnection({ host: target.host, port: target.port });
    const decoder = new FrameDecoder(HANDSHAKE_FRAME_BYTES);
    const nonce = newNonce();
    let step: 'challenge' | 'welcome' = 'challenge';
    const fail = (err: Error): void => {
      clearTimeout(timer);
      conn.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new EngineRefusedError('the engine did not finish the handshake within 10 s')), HANDSHAKE_MS);
    const onData = (chunk: Buffer): void => {
      let frames;
      try {
        frames = decoder.push(chunk);
      } catch (err) {
        return fail(err as Error);
      }
      for (const { header } of frames) {
        const msg = header as HandshakeFrame;
        if (msg?.t === 'denied') return fail(new EngineRefusedError(`the engine refused this node: ${msg.reason}`));
        if (step === 'challenge') {
          if (msg?.t !== 'challenge' || typeof msg.nonce !== 'string') return fail(new EngineRefusedError('not an Arbitra engine (no challenge)'));
          conn.write(encodeFrame({ t: 'hello', nonce, proof: proofOf(target.secret, 'api', msg.nonce) } satisfies HandshakeFrame));
          step = 'welcome';
        } else {
          if (msg?.t !== 'welcome' || !verifyProof(target.secret, 'engine', nonce, msg.proof)) {
            return fail(new EngineRefusedError('the engine could not prove the shared secret'));
          }
          clearTimeout(timer);
          conn.off('data', onData);
          conn.off('error', fail);
          conn.off('close', onClose);
          return resolve({ socket: engineSocket(conn), info: msg.info as EngineInfo });
        }
      }
    };
    const onClose = (): void => fail(new EngineRefusedError('the engine closed the connection during the handshake'));
    conn.on('data', onData);
    conn.once('error', fail);
    conn.once('close', onClose);
  });
}

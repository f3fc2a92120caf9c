// The engine socket: HTTP workers send scoring requests straight to the engine process over a Unix
// socket, so the cluster primary is out of every request's path (it still spawns and restarts the
// engine and tells the workers where the socket is). One connection per worker; ids are the
// connection's own. A connection that closes takes its jobs with it: the worker died, or the
// engine did and the worker fails what it was waiting for. The same frames serve a remote engine
// over TCP (tcp.ts), after a handshake.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { wireError, type WireError } from './ipc.js';
import { cancelledError, EngineError, type EngineService, type EngineStats, type TextScoreRequest, type TextScoreResult } from './types.js';
import { encodeFrame, FrameDecoder, packRows, unpackRows } from './wire.js';

type ToEngine = { t: 'score'; id: number; request: TextScoreRequest } | { t: 'cancel'; id: number } | { t: 'stats'; id: number };
type FromEngine =
  | ({ t: 'result'; id: number; lengths: number[] } & Omit<TextScoreResult, 'branches'>)
  | { t: 'stats'; id: number; stats: EngineStats }
  | { t: 'error'; id: number; error: WireError };

/** What a socket serves: scoring, and the counters when the engine has them (a remote engine's metrics). */
export interface ServedEngine extends Pick<EngineService, 'scoreText'> {
  stats?(): EngineStats;
}

export interface EngineSocketServer {
  path: string;
  close(): void;
}

const DIR_PREFIX = 'arbitra-engine-';

/**
 * Listens in a fresh directory of its own (mode 0700, the socket 0600): only this user reaches it.
 * The engine's pid in the directory's name says whose it is.
 */
export async function serveEngineSocket(engine: ServedEngine, log: (line: string) => void): Promise<EngineSocketServer> {
  await removeOrphans();
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), `${DIR_PREFIX}${process.pid}-`)), 'engine.sock');
  const server = net.createServer((conn) => serveConnection(conn, engine, log));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(file, resolve);
    });
    fs.chmodSync(file, 0o600);
  } catch (err) {
    server.close();
    removeEngineSocket(file);
    throw err;
  }
  return {
    path: file,
    close() {
      server.close();
      removeEngineSocket(file);
    },
  };
}

/**
 * The socket and its directory; also called by the engine's host, since a killed engine cannot.
 * Best effort: a leftover directory in the temp dir must not stop an engine or its host.
 */
export function removeEngineSocket(file: string): void {
  try {
    fs.rmSync(file, { force: true });
    fs.rmdirSync(path.dirname(file));
  } catch {}
}

/**
 * Sockets of engines that died together with their host (a SIGKILL to the whole group leaves
 * nobody to remove them). Only when the pid in the name runs no more here and nothing answers on
 * the socket: a /tmp shared with another pid namespace may hold a live engine under a pid that
 * means nothing here.
 */
async function removeOrphans(): Promise<void> {
  const dirs = fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith(DIR_PREFIX) && !running(Number(name.slice(DIR_PREFIX.length).split('-')[0])));
  await Promise.all(
    dirs.map(async (name) => {
      const file = path.join(os.tmpdir(), name, 'engine.sock');
      if (!(await answers(file))) removeEngineSocket(file);
    }),
  );
}

function running(pid: number): boolean {
  // Not a pid: not ours to judge.
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** False only when the socket is certainly dead: refused, or gone. */
function answers(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createConnection(file);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code !== 'ECONNREFUSED' && err.code !== 'ENOENT'));
  });
}

/** Serves scoring frames on a connection (a TCP one once its handshake is done). */
export function serveConnection(conn: net.Socket, engine: ServedEngine, log: (line: string) => void): void {
  const decoder = new FrameDecoder();
  const jobs = new Map<number, AbortController>();
  const answer = (id: number, outcome: { result: TextScoreResult } | { error: unknown }): void => {
    let frame: Buffer;
    try {
      if ('result' in outcome) {
        const { branches, ...rest } = outcome.result;
        const { lengths, values } = packRows(branches);
        frame = encodeFrame({ t: 'result', id, lengths, ...rest } satisfies FromEngine, values);
      } else {
        frame = encodeFrame({ t: 'error', id, error: wireError(outcome.error) } satisfies FromEngine);
      }
    } catch (err) {
      frame = encodeFrame({ t: 'error', id, error: wireError(err) } satisfies FromEngine);
    }
    if (!conn.destroyed) conn.write(frame);
  };
  const refuse = (why: string): void => {
    log(`engine socket: ${why}; closing the connection`);
    conn.destroy();
  };
  conn.on('data', (chunk: Buffer) => {
    let frames;
    try {
      frames = decoder.push(chunk);
    } catch (err) {
      return refuse((err as Error).message);
    }
    for (const { header } of frames) {
      const msg = header as ToEngine;
      if (!Number.isInteger(msg?.id)) return refuse('a message without an id');
      if (msg.t === 'cancel') {
        jobs.get(msg.id)?.abort();
      } else if (msg.t === 'stats') {
        const frame = engine.stats
          ? encodeFrame({ t: 'stats', id: msg.id, stats: engine.stats() } satisfies FromEngine)
          : encodeFrame({ t: 'error', id: msg.id, error: { code: 'invalid_request', message: 'this engine socket has no counters' } } satisfies FromEngine);
        conn.write(frame);
      } else if (msg.t === 'score' && !jobs.has(msg.id)) {
        const aborter = new AbortController();
        jobs.set(msg.id, aborter);
        void engine
          .scoreText(msg.request, aborter.signal)
          .then(
            (result) => answer(msg.id, { result }),
            (error: unknown) => answer(msg.id, { error }),
          )
          .finally(() => jobs.delete(msg.id));
      } else {
        return refuse(`an unexpected message (${String(msg.t)}, id ${msg.id})`);
      }
    }
  });
  // The worker is gone: nobody waits for its jobs any more.
  conn.on('close', () => {
    for (const aborter of jobs.values()) aborter.abort();
  });
  conn.on('error', () => {});
}

export interface EngineSocket {
  /** Rejects with `unavailable` when the connection closes first; throws a FrameError at once when the request is too large for a frame. */
  score(request: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult>;
  stats(): Promise<EngineStats>;
  readonly closed: boolean;
  /** Resolves when the connection has closed, from either end. */
  readonly done: Promise<void>;
  close(): void;
}

export function connectEngineSocket(file: string): Promise<EngineSocket> {
  return new Promise((resolve, reject) => {
    const conn = net.createConnection(file);
    conn.once('error', reject);
    conn.once('connect', () => {
      conn.off('error', reject);
      resolve(engineSocket(conn));
    });
  });
}

/** The client end of a connection (a TCP one once its handshake is done). */
export function engineSocket(conn: net.Socket): EngineSocket {
  const decoder = new FrameDecoder();
  /** Each waiter reads its own kind of answer from the frame; a throw there means the stream is unusable. */
  const waiting = new Map<number, { take: (msg: FromEngine, payload: Buffer) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  let closed = false;
  let resolveDone: () => void = () => {};
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  const stopped = (): EngineError => new EngineError('unavailable', 'the engine process stopped while answering; retry shortly');

  conn.on('data', (chunk: Buffer) => {
    let frames;
    try {
      frames = decoder.push(chunk);
    } catch {
      // A stream we cannot read any more; the close fails what was waiting.
      return conn.destroy();
    }
    for (const { header, payload } of frames) {
      const msg = header as FromEngine;
      const w = waiting.get(msg?.id);
      if (!w) continue;
      waiting.delete(msg.id);
      if (msg.t === 'error') {
        w.reject(new EngineError(msg.error.code, msg.error.message, msg.error.details ?? {}));
        continue;
      }
      try {
        w.take(msg, payload);
      } catch (err) {
        w.reject(err as Error);
        return conn.destroy();
      }
    }
  });
  conn.on('error', () => {});
  conn.on('close', () => {
    closed = true;
    for (const w of waiting.values()) w.reject(stopped());
    waiting.clear();
    resolveDone();
  });

  const send = (msg: ToEngine): void => {
    if (!closed) conn.write(encodeFrame(msg));
  };

  /** Sends `frame` (id `id`) and resolves with what `read` makes of the answer. */
  function ask<T>(id: number, frame: Buffer, read: (msg: FromEngine, payload: Buffer) => T, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (closed) return reject(stopped());
      if (signal?.aborted) return reject(cancelledError());
      // Work nobody waits for any more is dropped in the engine.
      const onAbort = (): void => {
        waiting.delete(id);
        reject(cancelledError());
        send({ t: 'cancel', id });
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = (): void => signal?.removeEventListener('abort', onAbort);
      waiting.set(id, {
        take: (msg, payload) => {
          settle();
          resolve(read(msg, payload));
        },
        reject: (e) => {
          settle();
          reject(e);
        },
      });
      conn.write(frame);
    });
  }

  return {
    get closed() {
      return closed;
    },
    done,
    close: () => conn.destroy(),
    score(request, signal) {
      const id = nextId++;
      const frame = encodeFrame({ t: 'score', id, request } satisfies ToEngine);
      return ask(
        id,
        frame,
        (msg, payload) => {
          if (msg.t !== 'result') throw new Error(`the engine answered a score with ${msg.t}`);
          const { t: _t, id: _id, lengths, ...rest } = msg;
          return { branches: unpackRows(lengths, payload), ...rest };
        },
        signal,
      );
    },
    stats() {
      const id = nextId++;
      return ask(id, encodeFrame({ t: 'stats', id } satisfies ToEngine), (msg) => {
        if (msg.t !== 'stats') throw new Error(`the engine answered a stats request with ${msg.t}`);
        return msg.stats;
      });
    },
  };
}

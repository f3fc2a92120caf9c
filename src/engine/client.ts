// The engines as seen from an HTTP worker: scoring requests go straight to an engine process's
// socket (socket.ts); the primary's status broadcasts say whether each engine is loading, ready or
// down, and where its socket is. With several engines (`--gpus`) each request is placed by
// placement.ts: the engine that cached its prefix, unless another has less work waiting. A worker
// that cannot connect to a socket, or whose request is too large for a frame, sends the request
// through the primary instead, as every request once went.
import { ENGINE_CH, isEngineMessage, serviceStatus, type EngineState, type WorkerEngineMessage } from './ipc.js';
import { placeRequest } from './placement.js';
import { connectEngineSocket, type EngineSocket } from './socket.js';
import { connectEngineTcp, parseEngineAddress } from './tcp.js';
import { cancelledError, EngineError, type EngineInfo, type EngineService, type TextScoreRequest, type TextScoreResult } from './types.js';
import { FrameError } from './wire.js';

export interface EngineClient extends EngineService {
  engines(): EngineState[];
}

/** One engine as this worker knows it. */
interface Link extends EngineState {
  info?: EngineInfo;
  message?: string;
  socketPath?: string;
  /** The connection to socketPath; null inside when it could not be made (the relay takes over). */
  direct: Promise<EngineSocket | null> | null;
  /** Characters of the prompts this worker has waiting on the engine: the load placement weighs. */
  load: number;
}

export interface EngineClientOptions {
  /** Engines of the service, as the primary started or watches them: their states arrive in its broadcasts. */
  count: number;
  /** ARBITRA_ENGINE_SECRET, for remote engines. */
  secret?: string;
  /** A private certificate authority for tls:// engines. */
  ca?: Buffer;
}

export function connectEngine(opts: EngineClientOptions, log: (line: string) => void): EngineClient {
  if (!process.send) throw new Error('connectEngine() needs an IPC channel to the cluster primary');
  const links: Link[] = Array.from({ length: opts.count }, (_, engine) => ({ engine, device: null, status: 'loading', direct: null, load: 0 }));
  let nextId = 1;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  function open(link: Link, address: string): Promise<EngineSocket | null> {
    const where = parseEngineAddress(address);
    const connecting =
      'path' in where
        ? connectEngineSocket(where.path)
        : connectEngineTcp({ host: where.host, port: where.port, secret: opts.secret ?? '', tls: where.tls ? { ca: opts.ca } : undefined }).then((r) => r.socket);
    return connecting.catch((err: Error) => {
      log(`engine ${link.engine} socket ${address} unreachable (${err.message}); its scoring requests go through the primary`);
      return null;
    });
  }

  process.on('message', (msg: unknown) => {
    if (!isEngineMessage(msg)) return;
    if (msg.type === 'status') {
      const link = links[msg.engine];
      if (!link) return;
      link.status = msg.status;
      link.device = msg.device;
      link.info = msg.info ?? link.info;
      link.message = msg.message;
      if (msg.socket !== link.socketPath) {
        // A new engine process (or none): the old connection, if any, is to one that died.
        void link.direct?.then((conn) => conn?.close());
        link.socketPath = msg.socket;
        link.direct = link.socketPath ? open(link, link.socketPath) : null;
      }
    } else if (msg.type === 'response') {
      const w = waiting.get(msg.id);
      if (!w) return;
      if (msg.ok) w.resolve(msg.result);
      else w.reject(new EngineError(msg.error.code, msg.error.message, msg.error.details ?? {}));
    }
  });

  const unavailable = (): EngineError => {
    const s = serviceStatus(links);
    const message = links.find((l) => l.message)?.message;
    return new EngineError('unavailable', message ?? (s === 'loading' ? 'the model is still loading' : 'the engine is not running'));
  };

  // No timer of its own, on either path: the request's deadline and its client's disconnect abort
  // `signal`, and an engine process that dies fails every request it held. A second, shorter clock
  // here once cut long requests off with a 503 while the engine was still working on them.
  function relay(link: Link, payload: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult> {
    const id = nextId++;
    return new Promise<TextScoreResult>((resolve, reject) => {
      // Work nobody waits for any more is dropped in the engine.
      const onAbort = (): void => {
        settle();
        reject(cancelledError());
        process.send!({ ch: ENGINE_CH, type: 'cancel', engine: link.engine, id } satisfies WorkerEngineMessage);
      };
      const settle = (): void => {
        waiting.delete(id);
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      waiting.set(id, {
        resolve: (v) => {
          settle();
          resolve(v as TextScoreResult);
        },
        reject: (e) => {
          settle();
          reject(e);
        },
      });
      process.send!({ ch: ENGINE_CH, type: 'request', engine: link.engine, id, op: 'score', payload } satisfies WorkerEngineMessage);
    });
  }

  async function scoreOn(link: Link, request: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult> {
    const pending = link.direct;
    let conn = await pending;
    // The engine closed this connection (it only does so on a framing error, or by dying): one new
    // try; if the engine is gone the relay answers `unavailable` until the primary says otherwise.
    if (conn?.closed && link.socketPath) {
      if (link.direct === pending) link.direct = open(link, link.socketPath);
      conn = await link.direct;
    }
    if (signal?.aborted) throw cancelledError();
    if (conn) {
      try {
        return await conn.score(request, signal);
      } catch (err) {
        if (!(err instanceof FrameError)) throw err;
      }
    }
    return relay(link, request, signal);
  }

  async function scoreText(request: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult> {
    const prefixWork = (request.system?.length ?? 0) + request.prefix.length;
    const work = prefixWork + request.branches.reduce((n, b) => n + b.suffix.length, 0);
    const tried = new Set<number>();
    for (;;) {
      if (signal?.aborted) throw cancelledError();
      const ready = links.filter((l) => l.status === 'ready' && !tried.has(l.engine));
      if (ready.length === 0) throw unavailable();
      const chosen = placeRequest(
        ready.map((l) => ({ id: l.engine, load: l.load })),
        [request.system ?? '', request.prefix],
        prefixWork,
      );
      const link = links[chosen]!;
      tried.add(link.engine);
      link.load += work;
      try {
        return await scoreOn(link, request, signal);
      } catch (err) {
        // Its engine died under it: scoring has no side effects, so another engine may take it whole.
        if (!(err instanceof EngineError && err.code === 'unavailable')) throw err;
        if (!links.some((l) => l.status === 'ready' && !tried.has(l.engine))) throw err;
      } finally {
        link.load -= work;
      }
    }
  }

  // The primary's status broadcasts reach only workers already listening; a worker started (or
  // restarted) after the engines came up asks once.
  process.send({ ch: ENGINE_CH, type: 'subscribe' } satisfies WorkerEngineMessage);

  return {
    engines: () => links.map(({ engine, device, status }) => ({ engine, device, status })),
    info: async () => {
      const info = links.find((l) => l.status === 'ready' && l.info)?.info;
      if (!info) throw unavailable();
      return info;
    },
    scoreText,
  };
}

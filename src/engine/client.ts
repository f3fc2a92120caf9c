// The engines as seen from an HTTP worker: the primary's status broadcasts say whether each engine
// is loading, ready, wedged or down, and where it listens; scoring requests go straight to the
// engine service there (rpc/client.ts), one channel per engine. With several engines (`--gpus`,
// `--engines`) each request is placed by placement.ts: the engine that cached its prefix, unless
// another has less work waiting. A request whose engine turns out not to be there is placed again
// on another ready one; with none left it is answered `unavailable` (503 with Retry-After).
import { ENGINE_CH, isEngineMessage, serviceStatus, type EngineState, type WorkerEngineMessage } from './ipc.js';
import { placementKey, placeRequest } from './placement.js';
import { openEngineChannel, type ChannelOptions, type EngineChannel } from './rpc/client.js';
import { cancelledError, EngineError, type EngineInfo, type EngineService, type TextScoreRequest, type TextScoreResult } from './types.js';

export interface EngineClient extends EngineService {
  engines(): EngineState[];
}

/** One engine as this worker knows it. */
interface Link extends EngineState {
  info?: EngineInfo;
  address?: string;
  channel: EngineChannel | null;
  /** Characters of the prompts this worker has waiting on the engine: the load placement weighs. */
  load: number;
}

export interface EngineClientOptions extends ChannelOptions {
  /** Engines of the service, as the primary started or watches them: their states arrive in its broadcasts. */
  count: number;
}

export function connectEngine(opts: EngineClientOptions, log: (line: string) => void): EngineClient {
  if (!process.send) throw new Error('connectEngine() needs an IPC channel to the cluster primary');
  const links: Link[] = Array.from({ length: opts.count }, (_, engine) => ({
    engine,
    device: null,
    status: 'loading',
    determinism: null,
    kernelPath: null,
    channel: null,
    load: 0,
  }));

  process.on('message', (msg: unknown) => {
    if (!isEngineMessage(msg) || msg.type !== 'status') return;
    const link = links[msg.engine];
    if (!link) return;
    link.status = msg.status;
    link.device = msg.device;
    link.determinism = msg.determinism ?? null;
    link.kernelPath = msg.kernelPath ?? null;
    link.info = msg.info ?? link.info;
    link.message = msg.message;
    if (msg.address !== link.address) {
      // A new engine process (or none): calls still open on the old channel are to one that died.
      link.channel?.close();
      link.address = msg.address;
      link.channel = null;
      if (link.address) {
        try {
          link.channel = openEngineChannel(link.address, opts);
        } catch (err) {
          log(`engine ${link.engine} at ${link.address}: ${(err as Error).message}`);
        }
      }
    }
  });

  // An engine the primary still calls ready at the same address a few seconds after this worker
  // failed to reach it is said once per address: an engine that died mid-call is soon reported
  // by the primary instead, and needs no line of its own.
  const unreachable = new Set<string>();
  const UNREACHABLE_GRACE_MS = 5_000;

  const unavailable = (): EngineError => {
    const s = serviceStatus(links);
    const message = links.find((l) => l.message)?.message;
    return new EngineError('unavailable', message ?? (s === 'loading' ? 'the model is still loading' : 'the engine is not running'));
  };

  async function scoreText(request: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult> {
    const prefixWork = (request.system?.length ?? 0) + request.prefix.length;
    const work = prefixWork + request.branches.reduce((n, b) => n + b.suffix.length, 0);
    const tried = new Set<number>();
    for (;;) {
      if (signal?.aborted) throw cancelledError();
      const ready = links.filter((l) => l.status === 'ready' && l.channel && !tried.has(l.engine));
      if (ready.length === 0) throw unavailable();
      const chosen = placeRequest(
        ready.map((l) => ({ id: l.engine, load: l.load })),
        placementKey(request),
        prefixWork,
      );
      const link = links[chosen]!;
      tried.add(link.engine);
      link.load += work;
      try {
        return await link.channel!.score(request, signal);
      } catch (err) {
        // Its engine was not there or died under it: scoring has no side effects, so another
        // engine may take it whole.
        if (!(err instanceof EngineError && err.code === 'unavailable')) throw err;
        const address = link.address;
        if (address && !unreachable.has(address)) {
          unreachable.add(address);
          setTimeout(() => {
            if (link.status === 'ready' && link.address === address) {
              log(`engine ${link.engine} at ${address} cannot be reached from this worker (${err.message}); its requests are answered 503 until it can`);
            }
          }, UNREACHABLE_GRACE_MS).unref();
        }
        if (!links.some((l) => l.status === 'ready' && l.channel && !tried.has(l.engine))) throw err;
      } finally {
        link.load -= work;
      }
    }
  }

  // The primary's status broadcasts reach only workers already listening; a worker started (or
  // restarted) after the engines came up asks once.
  process.send({ ch: ENGINE_CH, type: 'subscribe' } satisfies WorkerEngineMessage);

  return {
    engines: () =>
      links.map(({ engine, device, status, message, determinism, kernelPath }) => ({
        engine,
        device,
        status,
        ...(message && status !== 'ready' ? { message } : {}),
        determinism,
        kernelPath,
      })),
    info: async () => {
      const info = links.find((l) => l.status === 'ready' && l.info)?.info;
      if (!info) throw unavailable();
      return info;
    },
    scoreText,
  };
}

// Watches an engine that says it is ready: asks for its counters every second and judges it wedged
// when it says so itself (it holds work and has finished no decode within its liveness bound,
// liveness.ts) or when it has not answered for the bound's floor (its event loop or its scheduler's
// lock is stuck). The verdict is the watcher's to act on: a local engine is killed and restarted,
// a remote one is left out until it answers again.
import { EngineError, type EngineStats } from './types.js';

const POLL_MS = 1_000;
const STATS_TIMEOUT_MS = 2_000;

export interface Watchdog {
  stop(): void;
}

export interface WatchOptions {
  stats(timeoutMs: number): Promise<EngineStats>;
  /** EngineOptions.livenessSeconds in milliseconds. */
  floorMs: number;
  /** Called once, with the reason; the watch then ends. */
  onWedged: (why: string) => void;
  /** Called once when the engine is not there at all (an `unavailable` answer); the watch then ends. Ignored when absent. */
  onGone?: () => void;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

export function watchLiveness(opts: WatchOptions): Watchdog {
  let stopped = false;
  let answeredAt = Date.now();
  const end = (then: () => void): void => {
    if (stopped) return;
    stopped = true;
    then();
  };
  void (async () => {
    while (!stopped) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS).unref());
      if (stopped) return;
      let stats: EngineStats | null = null;
      try {
        stats = await opts.stats(STATS_TIMEOUT_MS);
      } catch (err) {
        if (opts.onGone && err instanceof EngineError && err.code === 'unavailable') return end(opts.onGone);
      }
      if (stopped) return;
      const now = Date.now();
      if (stats) {
        answeredAt = now;
        if (stats.wedged) {
          const why = `it holds ${stats.queueDepth} job(s) and has finished no decode for ${seconds(stats.stalledMs)} (bound ${seconds(stats.livenessBoundMs)})`;
          return end(() => opts.onWedged(why));
        }
      } else if (now - answeredAt > opts.floorMs) {
        return end(() => opts.onWedged(`it has not answered for ${seconds(now - answeredAt)}`));
      }
    }
  })();
  return { stop: () => end(() => {}) };
}

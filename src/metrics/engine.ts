// The engines' gauges, in the cluster primary's registry (the cluster metrics aggregation merges them
// with the workers'), one series per engine under the label `engine`. Every gauge's collect() awaits
// one stats call per engine shared by the whole scrape, so no gauge is read before the numbers arrive.
import { Gauge } from 'prom-client';
import type { EngineState } from '../engine/ipc.js';
import { isCovered, keepsPromise } from '../engine/exact-path.js';
import type { EngineStats } from '../engine/types.js';

export interface EngineMetricsSource {
  state(): EngineState;
  restarts(): number;
  wedges(): number;
  stats(): Promise<EngineStats | null>;
}

/** Registers the gauges over whatever `engines()` holds at scrape time. */
export function registerEngineMetrics(engines: () => readonly EngineMetricsSource[]): void {
  // A scrape collects every gauge at once (prom-client starts all collects before awaiting any), so
  // the gauges share the call that is still out; once it is answered the next scrape asks again and
  // sees every request answered before it. (Shared for a fixed 250 ms instead, a scrape right after
  // a fast decision read the counts from before it.)
  const pending = new Map<number, Promise<EngineStats | null>>();
  const statsOf = (source: EngineMetricsSource): Promise<EngineStats | null> => {
    const id = source.state().engine;
    let stats = pending.get(id);
    if (!stats) {
      stats = source.stats();
      pending.set(id, stats);
      const settled = (): void => void pending.delete(id);
      stats.then(settled, settled);
    }
    return stats;
  };
  const perEngine = (name: string, help: string, read: (source: EngineMetricsSource) => number | Promise<number | null>): void => {
    new Gauge({
      name,
      help,
      labelNames: ['engine'],
      async collect() {
        this.reset();
        await Promise.all(
          engines().map(async (source) => {
            const value = await read(source);
            if (value !== null) this.set({ engine: String(source.state().engine) }, value);
          }),
        );
      },
    });
  };
  const fromStats = (name: string, help: string, read: (s: EngineStats) => number): void =>
    perEngine(name, help, async (source) => {
      const s = await statsOf(source);
      return s ? read(s) : null;
    });
  fromStats('arbitra_engine_queue_depth', 'Scoring jobs waiting or running in the engine', (s) => s.queueDepth);
  fromStats('arbitra_engine_decodes_total', 'llama_decode calls since the engine started', (s) => s.decodes);
  fromStats(
    'arbitra_engine_lone_decodes_total',
    "Decodes filled to --max-step-ms because one key's work was all the engine held, of arbitra_engine_decodes_total",
    (s) => s.loneDecodes,
  );
  fromStats('arbitra_engine_tokens_evaluated_total', 'Tokens run through the model since the engine started', (s) => s.tokensEvaluated);
  fromStats('arbitra_engine_branches_scored_total', 'Question branches scored since the engine started', (s) => s.branchesScored);
  fromStats('arbitra_engine_jobs_cancelled_total', 'Scoring jobs dropped because their client left or their deadline passed', (s) => s.jobsCancelled);
  fromStats('arbitra_engine_last_batch_tokens', 'Tokens in the most recent llama_decode batch', (s) => s.lastBatchTokens);
  fromStats('arbitra_engine_last_batch_branches', 'Branches in the most recent llama_decode batch', (s) => s.lastBatchBranches);
  fromStats('arbitra_engine_work_in_hand_seconds', 'Engine time the admitted and unfinished requests are estimated to need', (s) => s.workInHandMs / 1000);
  fromStats('arbitra_engine_decode_fixed_ms', "A decode's fixed cost, as fitted to the engine's own decodes (0 until measured)", (s) => s.cost.perDecodeMs);
  fromStats(
    'arbitra_engine_decode_token_ms',
    "Cost of each token in a decode, as fitted to the engine's own decodes (0 until measured)",
    (s) => s.cost.perTokenMs,
  );
  fromStats(
    'arbitra_engine_decode_row_ms',
    "Cost of each logits row read from a decode, as fitted to the engine's own decodes (0 until measured)",
    (s) => s.cost.perRowMs,
  );
  fromStats('arbitra_engine_cached_prefixes', 'Prefixes kept in the KV cache', (s) => s.cachedPrefixes);
  fromStats('arbitra_engine_kv_cells_held', 'KV cells the cached and active prefixes hold between decodes (an upper bound)', (s) => s.kvCellsHeld);
  fromStats('arbitra_engine_kv_cells_peak', 'Most KV cells a decode has used since the engine started (an upper bound)', (s) => s.kvCellsPeak);
  fromStats('arbitra_engine_decode_seconds_total', 'Seconds spent in llama_decode since the engine started', (s) => s.decodeSeconds);
  fromStats('arbitra_engine_readout_seconds_total', 'Seconds spent reading log-probs out of the logits since the engine started', (s) => s.readoutSeconds);
  new Gauge({
    name: 'arbitra_engine_admission_refusals_total',
    help: 'Requests the engine refused before doing any work: too_costly (more than their deadline allows alone, 422) or busy (not behind the work in hand, 429)',
    labelNames: ['engine', 'reason'],
    async collect() {
      this.reset();
      await Promise.all(
        engines().map(async (source) => {
          const s = await statsOf(source);
          if (!s) return;
          const engine = String(source.state().engine);
          this.set({ engine, reason: 'too_costly' }, s.admissionRefusals.tooCostly);
          this.set({ engine, reason: 'busy' }, s.admissionRefusals.busy);
        }),
      );
    },
  });
  fromStats('arbitra_engine_stalled_seconds', 'Seconds the engine has held work without finishing a decode (0 while it holds none)', (s) => s.stalledMs / 1000);
  fromStats(
    'arbitra_engine_liveness_bound_seconds',
    'How long the engine may hold work without finishing a decode before it counts as wedged',
    (s) => s.livenessBoundMs / 1000,
  );
  perEngine(
    'arbitra_engine_deterministic',
    '1 when the engine keeps its promise: a covered path and a check at load that found the same scores alone, crowded and after a cached head, bit for bit; 0 when not (an uncovered path included); absent when not checked on a covered path',
    async (source) => {
      const { kernelPath, determinism } = source.state();
      const kept = keepsPromise(kernelPath, determinism?.deterministic ?? null);
      return kept === null ? null : Number(kept);
    },
  );
  perEngine(
    'arbitra_engine_exact_path_covered',
    "1 when the path the engine resolved at load is one the exact kernels' promise covers (flash attention on, and on a GPU every covered condition); 0 when not; absent until loaded",
    async (source) => {
      const path = source.state().kernelPath;
      return path ? Number(isCovered(path)) : null;
    },
  );
  perEngine('arbitra_engine_flash_attention', '1 when flash attention is on as the engine resolved it at load; absent until loaded', async (source) => {
    const path = source.state().kernelPath;
    return path ? Number(path.flashAttention) : null;
  });
  new Gauge({
    name: 'arbitra_engine_cpu_variant',
    help: 'Always 1, labelled with the CPU backend variant the engine loaded ("built-in" for a build without variants); absent until loaded. Bits are the same within a variant',
    labelNames: ['engine', 'variant'],
    collect() {
      this.reset();
      for (const source of engines()) {
        const path = source.state().kernelPath;
        if (path) this.set({ engine: String(source.state().engine), variant: path.cpuVariant }, 1);
      }
    },
  });
  perEngine(
    'arbitra_engine_determinism_max_difference_nats',
    "The largest difference of a log-probability the engine's check at load saw between cases; absent when not checked",
    async (source) => source.state().determinism?.maxDifference ?? null,
  );
  perEngine('arbitra_engine_up', '1 when the engine process has its model loaded', (source) => (source.state().status === 'ready' ? 1 : 0));
  perEngine('arbitra_engine_wedged', '1 while the engine is judged wedged: it holds work and has finished no decode within its liveness bound', (source) =>
    source.state().status === 'wedged' ? 1 : 0,
  );
  perEngine('arbitra_engine_restarts_total', 'Engine process restarts (or reconnections to a remote engine) after it died or wedged', (source) =>
    source.restarts(),
  );
  perEngine('arbitra_engine_wedges_total', 'Times the engine was found wedged (a local one is then killed and restarted)', (source) => source.wedges());
}

// A chaos run against a live `arbitra serve`: closed-loop clients send decisions without pause
// (some one identical body, whose prefix the engine keeps cached; some a fresh state each time),
// while an HTTP worker, the engine process or both are killed with SIGKILL, again and again. For each
// kill it records whether every request sent around it got an answer (any HTTP status: 200, 503,
// 504 ...; a lost connection only for a request the killed worker held), and how long until a
// decision with a new state on the load key succeeded again. A request with no answer by
// `answerWithinMs` is silence: the failure this run exists to find. Used by `npm run bench:chaos`
// and, at a size CI affords, by test/cluster/chaos.test.ts.
import { performance } from 'node:perf_hooks';
import { call, json, outcome, type Reply } from './http.js';
import { pidsOf } from './procs.js';

export type KillTarget = 'worker' | 'engine' | 'both';

/** What a client sends: the same body every time (warm), or a state never seen before (cold). */
export type ClientKind = 'identical' | 'distinct';

export interface ChaosClients {
  kind: ClientKind;
  count: number;
  /** Which API key they use: the load key, or a second one. */
  key: 'load' | 'other';
}

/**
 * The load that starved: the load key's clients send one identical body (three) and fresh states
 * (two), and a second key's client fresh states too.
 */
export const ONE_KEY_MIX: readonly ChaosClients[] = [
  { kind: 'identical', count: 3, key: 'load' },
  { kind: 'distinct', count: 2, key: 'load' },
  { kind: 'distinct', count: 1, key: 'other' },
];

export interface ChaosOptions {
  url: string;
  /** The primary's pid: its children are the processes killed. */
  primary: number;
  keys: { load: string; other: string };
  clients: readonly ChaosClients[];
  kills: readonly KillTarget[];
  /** Load before the first kill, and after each heal before the next kill. */
  settleMs: number;
  /** A request unanswered by then is counted as silence. */
  answerWithinMs: number;
  /** A kill after which no new-state decision of the load key succeeds by then has not healed. */
  healWithinMs: number;
  log?: (line: string) => void;
}

export interface RequestRecord {
  kind: ClientKind | 'probe';
  key: 'load' | 'other';
  sentAt: number;
  doneAt: number;
  /** The HTTP status, or why none came ('timeout' is silence; ECONNRESET and the like a lost connection). */
  outcome: string;
  /** The server's own words for a failure, for whoever reads the report. */
  detail?: string;
}

export interface KillRecord {
  target: KillTarget;
  pids: number[];
  at: number;
  /** Milliseconds from the kill until a new-state decision of the load key succeeded; null: not within healWithinMs. */
  healedMs: number | null;
  /** Requests sent from the previous kill (or the start) until the next one, by outcome. */
  outcomes: Record<string, number>;
  /** When it did not heal: which workers answer /health and with what, and the engines' series then. */
  diagnosis?: string;
  /** Of those, the ones with no answer within answerWithinMs. */
  silent: number;
}

export interface ChaosReport {
  kills: KillRecord[];
  requests: RequestRecord[];
  /** Requests sent with no kill before them, by outcome (the run's first settle period). */
  beforeKills: Record<string, number>;
  /** Every request that got no answer at all. */
  silent: RequestRecord[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** A refused client pauses, so a server answering 503 at once is not turned into a busy loop. */
const PAUSE_AFTER_FAILURE_MS = 100;
const PROBE_INTERVAL_MS = 250;

/** The body the cached clients send, the same every time. */
export const IDENTICAL = { state: 'The invoice was paid twice.', questions: { money: { type: 'noul', instructions: 'Is this about money?' } } };
let nextRef = 0;

/** A state never sent before, with a yes/no and a three-way choice about it. */
export function distinctBody(): Record<string, unknown> {
  const ref = ++nextRef;
  return {
    state: `Ticket ${ref}-${process.pid}: the customer writes that parcel ${ref * 7919} arrived ${ref % 2 ? 'late' : 'damaged'} and asks what happens next.`,
    questions: {
      refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
      mood: { type: 'choice', instructions: 'How does the customer feel?', criteria: ['calm', 'annoyed', 'angry'] },
    },
  };
}

export function isSilence(r: Pick<RequestRecord, 'outcome'>): boolean {
  return r.outcome === 'timeout';
}

/** The pids a kill of `target` hits now: the lowest-numbered worker and/or the engine. */
export function victims(primary: number, target: KillTarget): number[] {
  const worker = pidsOf(primary, 'worker').slice(0, 1);
  const engine = pidsOf(primary, 'engine');
  return target === 'worker' ? worker : target === 'engine' ? engine : [...engine, ...worker];
}

function tally(rows: readonly RequestRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of rows) counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
  return counts;
}

/** What the server says of itself when it did not heal: /health on six new connections (which worker, which engine state) and the engines' series. */
async function diagnose(url: string): Promise<string> {
  const health = await Promise.all(
    Array.from({ length: 6 }, async () => {
      const r = await call(`${url}/health`, { timeoutMs: 5_000, fresh: true });
      const body = json(r);
      return `${outcome(r)} pid ${body?.pid} engines ${JSON.stringify(body?.engines)}`;
    }),
  );
  const metrics = await call(`${url}/metrics`, { timeoutMs: 5_000 });
  const engine = metrics.text.split('\n').filter((l) => l.startsWith('arbitra_engine_'));
  return `/health: ${health.join('; ')}\n${engine.join('\n')}`;
}

export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const log = opts.log ?? (() => {});
  const requests: RequestRecord[] = [];
  let running = true;

  async function decide(kind: RequestRecord['kind'], key: 'load' | 'other', timeoutMs: number): Promise<RequestRecord> {
    const body = kind === 'identical' ? IDENTICAL : distinctBody();
    const sentAt = performance.now();
    const r: Reply = await call(`${opts.url}/v1/systemone`, { headers: { authorization: `Bearer ${opts.keys[key]}` }, body, timeoutMs, fresh: true });
    const record: RequestRecord = { kind, key, sentAt, doneAt: sentAt + r.ms, outcome: outcome(r) };
    if (r.status !== 200) record.detail = json(r)?.detail?.message ?? r.error ?? r.text.slice(0, 200);
    requests.push(record);
    return record;
  }

  const loops = opts.clients.flatMap((c) =>
    Array.from({ length: c.count }, async () => {
      while (running) {
        const r = await decide(c.kind, c.key, opts.answerWithinMs);
        if (r.outcome !== '200') await sleep(PAUSE_AFTER_FAILURE_MS);
      }
    }),
  );

  // Probes still out when their heal window closed: they are waited for (and judged) like any request.
  const lateProbes: Promise<RequestRecord>[] = [];

  /** Sends new-state decisions of the load key one after another until one succeeds; ms since `since`. */
  async function healed(since: number): Promise<number | null> {
    while (performance.now() - since < opts.healWithinMs) {
      const probe = decide('probe', 'load', opts.answerWithinMs);
      const windowLeft = since + opts.healWithinMs - performance.now();
      let closing: NodeJS.Timeout | undefined;
      const windowClosed = new Promise<null>((resolve) => (closing = setTimeout(() => resolve(null), windowLeft)));
      // The window's timer goes with the probe that beat it: left pending it kept the process alive.
      const r = await Promise.race([probe, windowClosed]).finally(() => clearTimeout(closing));
      if (r === null) {
        lateProbes.push(probe);
        return null;
      }
      if (r.outcome === '200') return r.doneAt - since;
      await sleep(PROBE_INTERVAL_MS);
    }
    return null;
  }

  const kills: KillRecord[] = [];
  const started = performance.now();
  await sleep(opts.settleMs);
  for (const [i, target] of opts.kills.entries()) {
    const pids = victims(opts.primary, target);
    const at = performance.now();
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // It died meanwhile: the kill is done.
      }
    }
    const healedMs = await healed(at);
    log(
      `kill ${i + 1}/${opts.kills.length} (${target}, pids ${pids.join(' ') || 'none found'}): ${healedMs === null ? `NOT healed within ${opts.healWithinMs / 1000} s` : `healed after ${(healedMs / 1000).toFixed(1)} s`}`,
    );
    const diagnosis = healedMs === null ? await diagnose(opts.url) : undefined;
    if (diagnosis) log(diagnosis);
    kills.push({ target, pids, at, healedMs, outcomes: {}, silent: 0, diagnosis });
    await sleep(opts.settleMs);
  }
  running = false;
  await Promise.all([...loops, ...lateProbes]);

  // Each request belongs to the kill before it was sent (the first settle period to none).
  for (const [i, k] of kills.entries()) {
    const until = kills[i + 1]?.at ?? Infinity;
    const mine = requests.filter((r) => r.sentAt >= k.at && r.sentAt < until);
    k.outcomes = tally(mine);
    k.silent = mine.filter(isSilence).length;
  }
  const firstKill = kills[0]?.at ?? Infinity;
  const beforeKills = tally(requests.filter((r) => r.sentAt < firstKill));
  // Times from the start of the run, for whoever reads them.
  const rebased = requests.map((r) => ({ ...r, sentAt: r.sentAt - started, doneAt: r.doneAt - started }));
  return { kills: kills.map((k) => ({ ...k, at: k.at - started })), requests: rebased, beforeKills, silent: rebased.filter(isSilence) };
}

// The engine checks its own promise when it loads, on the real model and backend: a probe scored
// alone, again on its cached prefix, inside a batch crowded with other jobs and after a head it
// shares with another prompt, and (on a model with a sliding window) after an early head of a prompt
// that ran on past the window, must give the same log-probabilities bit for bit. The kernels under
// that promise were measured on the CPUs this project runs on; on a card nobody here ran, this is
// how a user learns whether it holds on theirs. With exact kernels the probe is also scored on
// llama.cpp's stock kernels: exact kernels that compute another function on this hardware (far
// beyond rounding) are not served, whatever their determinism.
import type { LlamaEngine, ScoreBranchTokens } from './llama-engine.js';
import { repeatedTokens } from './repeated-text.js';
import { isCovered, pathReport } from './exact-path.js';
import type { DeterminismReport, EngineInfo } from './types.js';

/**
 * Beyond this the exact kernels are taken to compute something other than the model on this
 * hardware: rounding moves a log-probability by hundredths of a nat, shape-chosen stock kernels by
 * up to about 0.5 on the default model (bench/RESULTS.md), a wrong kernel by whole nats.
 */
export const STOCK_TOLERANCE_NATS = 1;

const PROBE = 'A customer wrote to a small shop: the parcel arrived two days late, the box was dented and one of the three cups inside was cracked.';
const QUESTIONS = ['\nIs the customer angry? Answer:', '\nWas anything broken? Answer:'];
const CROWD = [
  'An engineer reports that the nightly build failed twice because a test timed out on the slow runner.',
  'The weather service expects heavy rain on Thursday and a dry, cold weekend in the north of the country.',
];
const CROWD_QUESTIONS = ['\nIs this urgent?', '\nIs it about money?', '\nShould someone reply?'];
/** The probe's head in the past-the-window case: a short state of the long prompt's first tokens. */
const WINDOW_HEAD = 48;
/**
 * The past-the-window case is skipped where the decode cost measured by the warm-up says it would
 * take longer than this (a model with a window of thousands of positions on a CPU).
 */
const WINDOW_CASE_MAX_MS = 10_000;
/** The probe's answers: log-probabilities under the full softmax, so any change of a logit shows. */
const CANDIDATES = [' yes', ' no', ' Yes', ' No', ' maybe', ' the'];

interface Probe {
  prefix: Int32Array;
  branches: ScoreBranchTokens[];
}

function probeOf(engine: LlamaEngine, text: string, questions: readonly string[]): Probe {
  const bare = (t: string): Int32Array => engine.tokenize(t, { addSpecial: false, parseSpecial: false });
  const candidates = Int32Array.from(CANDIDATES.map((w) => bare(w)[0]!));
  return { prefix: engine.tokenize(text, { addSpecial: true, parseSpecial: false }), branches: questions.map((q) => ({ suffix: bare(q), candidates })) };
}

/**
 * The largest absolute difference between two runs' log-probabilities; Number.MAX_VALUE where one
 * is not finite and they differ (a report travels as JSON, which has no Infinity).
 */
export function largestDifference(a: readonly Float32Array[], b: readonly Float32Array[]): number {
  let worst = 0;
  a.forEach((row, i) =>
    row.forEach((x, k) => {
      const y = b[i]![k]!;
      if (Object.is(x, y)) return;
      const d = Math.abs(x - y);
      worst = Math.max(worst, Number.isFinite(d) ? d : Number.MAX_VALUE);
    }),
  );
  return worst;
}

/**
 * A prompt that runs on past the sliding window, then the probe's questions on only its first
 * WINDOW_HEAD tokens, against the same head scored cold. Once a later decode's tokens are past the
 * window, llama.cpp may hand them the cells the window has left behind, which the early head still
 * needs (native/patches/llama-kv-window-kept.patch keeps them). The long prompt is 64 tokens longer
 * than the window or a prefix chunk, whichever is longer, so that its tail is decoded in a later
 * decode than its head and past the window whatever the chunking. Null where the model has no
 * window, the prompt does not fit the main lane, or it would take too long.
 */
async function pastWindow(engine: LlamaEngine, probe: Probe, score: (prefix: Int32Array) => Promise<Float32Array[]>): Promise<number | null> {
  const { slidingWindow, prefixChunk, contextSize } = engine.facts;
  const length = Math.max(slidingWindow, prefixChunk) + 64;
  const cost = engine.stats().cost;
  if (slidingWindow <= 0 || length >= contextSize || cost.perTokenMs * (length + WINDOW_HEAD) > WINDOW_CASE_MAX_MS) return null;
  const long = repeatedTokens(engine, `${PROBE} ${CROWD.join(' ')} `, length, { addSpecial: true, parseSpecial: false });
  const head = long.subarray(0, WINDOW_HEAD);
  engine.forgetCache();
  const cold = await score(head);
  engine.forgetCache();
  await engine.score(long.subarray(0, length), probe.branches.slice(0, 1), { tenant: 'determinism-check' });
  return largestDifference(cold, await score(head));
}

/** `faultNats` (tests only): the stock kernels' scores are moved by this much, as wrong kernels would move the exact ones. */
export async function checkDeterminism(engine: LlamaEngine, faultNats = 0): Promise<DeterminismReport> {
  const probe = probeOf(engine, PROBE, QUESTIONS);
  const scoreWith = async (prefix: Int32Array, opts: { reference?: boolean } = {}): Promise<Float32Array[]> =>
    (await engine.score(prefix, probe.branches, { tenant: 'determinism-check', ...opts })).logprobs;
  const score = (opts: { reference?: boolean } = {}): Promise<Float32Array[]> => scoreWith(probe.prefix, opts);

  engine.forgetCache();
  const alone = await score();
  // The prefix is cached now: its branches run alone on it, the first no longer behind its prefix.
  const cached = await score();

  // The probe's branches among other jobs' prefix chunks and branches, one tenant so that decodes
  // are filled as full as they get.
  engine.forgetCache();
  const crowd = CROWD.map((text) => probeOf(engine, text, CROWD_QUESTIONS));
  const crowdDone = crowd.map((c) => engine.score(c.prefix, c.branches, { tenant: 'determinism-check' }));
  const crowded = await score();
  await Promise.all(crowdDone);

  // A prompt that shares the probe's first half is decoded first: the probe reuses that head and
  // decodes on from the middle of its prefix.
  engine.forgetCache();
  const half = probe.prefix.subarray(0, Math.ceil(probe.prefix.length / 2));
  const other = probeOf(engine, CROWD[0]!, CROWD_QUESTIONS.slice(0, 1));
  await engine.score(Int32Array.from([...half, ...other.prefix.subarray(1)]), other.branches, { tenant: 'determinism-check' });
  const headCached = await score();

  const differences = {
    cached: largestDifference(alone, cached),
    crowded: largestDifference(alone, crowded),
    headCached: largestDifference(alone, headCached),
    pastWindow: await pastWindow(engine, probe, scoreWith),
  };
  const maxDifference = Math.max(...Object.values(differences).filter((d) => d !== null));
  const kernels = engine.facts.kernels;
  const stock = kernels === 'exact' ? (await engine.withReference(() => score({ reference: true }))).map((row) => row.map((x) => x + faultNats)) : null;
  const stockDifference = stock && largestDifference(alone, stock);
  engine.forgetCache();
  return { kernels, deterministic: maxDifference === 0, maxDifference, differences, stockDifference, fallback: null };
}

/** Why exact kernels whose probe is this far from the stock kernels' must not be served; null when they may. */
export function stockMismatch(r: DeterminismReport): string | null {
  if (r.stockDifference === null || r.stockDifference <= STOCK_TOLERANCE_NATS) return null;
  return `the exact kernels' scores differ from llama.cpp's stock kernels' by ${r.stockDifference.toFixed(3)} nats on this hardware (more than ${STOCK_TOLERANCE_NATS}): they compute something other than the model here, so the engine serves the stock kernels (--kernels fast) instead; please report this machine`;
}

/** The start-up lines that say what the check found, a warning where the promise does not hold. */
export function determinismReport(r: DeterminismReport, covered = true): string[] {
  const nats = (x: number): string => (x === 0 ? '0' : x < 0.001 ? x.toExponential(1) : x.toFixed(3));
  const window = r.differences.pastWindow === null ? '' : `, after a head of a prompt past the sliding window ${nats(r.differences.pastWindow)}`;
  const cases = `alone, cached ${nats(r.differences.cached)}, crowded ${nats(r.differences.crowded)}, after a cached head ${nats(r.differences.headCached)}${window} nats`;
  const lines: string[] = [];
  if (r.fallback) lines.push(`WARNING: ${r.fallback}`);
  if (r.deterministic && !covered) lines.push(`determinism: the probe gave the same scores on this load (${cases}), on a path the promise does not cover`);
  else if (r.deterministic) lines.push(`determinism: ${r.kernels} kernels give the same scores bit for bit on this machine (${cases})`);
  else if (r.kernels === 'exact')
    lines.push(
      `WARNING: determinism does not hold on this machine: the same question's log-probabilities moved by up to ${nats(r.maxDifference)} nats (${cases}); answers will move with the load`,
    );
  else lines.push(`determinism: off (--kernels fast): scores move with the load by up to ${nats(r.maxDifference)} nats here (${cases})`);
  return lines;
}

/** Every start-up line about an engine's promise: the path its contexts resolved, then what its check found. */
export function engineReport(info: Pick<EngineInfo, 'kernelPath' | 'determinism'>): string[] {
  return [...pathReport(info.kernelPath), ...(info.determinism ? determinismReport(info.determinism, isCovered(info.kernelPath)) : [])];
}

// Admission by cost. Before a request's tokens reach the scorer, the engine reckons what it will
// take (from the decode cost the scorer measures on this machine and model) and what is already
// queued, and holds that against the time the request has left: work that cannot finish before
// its deadline is refused before it costs anything, instead of holding the engine until a 504.

/** What a decode costs here, as the scorer measures it; every part 0 until it has measured. */
export interface DecodeCost {
  perDecodeMs: number;
  perTokenMs: number;
  perRowMs: number;
}

/** The work of one request as the scorer will run it. */
export interface WorkShape {
  /** Tokens decoded before any branch: the shared prefix, and each group's shared head. */
  prefixTokens: number;
  /** Each branch's own tokens. */
  suffixTokens: number[];
}

/** How the scorer cuts work into decodes (ScorerOptions). */
export interface DecodePlan {
  prefixChunk: number;
  stepTargetMs: number;
  /** The bound of a decode while one tenant's work is alone: how long the decode in progress may hold a newcomer. */
  maxStepMs: number;
}

/** The scorer never cuts a branch into chunks shorter than this (kMinChunk). */
const MIN_CHUNK_TOKENS = 32;

/**
 * Work is admitted only where it is reckoned to finish within this share of the time its request
 * has left: the estimate errs both ways, and requests that arrive after it take their turns too.
 */
export const DEADLINE_SHARE = 0.8;

export function isMeasured(cost: DecodeCost): boolean {
  return cost.perTokenMs > 0;
}

/**
 * Decodes a branch of `tokens` takes when it is cut into chunks as the scorer cuts one beside other
 * tenants' work (branch_piece): a branch whose decode alone would take more than twice the step
 * target goes in the fewest chunks that each fit it, and each chunk pays a decode's fixed part.
 */
export function branchChunks(cost: DecodeCost, tokens: number, plan: DecodePlan): number {
  const alone = 2 * plan.stepTargetMs - cost.perDecodeMs - cost.perRowMs;
  const longest = Math.max(MIN_CHUNK_TOKENS, alone > 0 ? Math.floor(alone / Math.max(cost.perTokenMs, 1e-9)) : 0);
  return Math.max(1, Math.ceil(tokens / longest));
}

/**
 * Engine milliseconds of the work: the prefix in chunks (its first branch rides with the last one),
 * then the other branches packed as many to a decode as fit the step target, or each in its chunks.
 * Reckoned with decodes cut to the step target, as they are while other tenants have work; alone,
 * the scorer fills decodes up to the max step and the work takes less.
 */
export function workMs(cost: DecodeCost, work: WorkShape, plan: DecodePlan): number {
  const rows = work.suffixTokens.length;
  const suffixTokens = work.suffixTokens.reduce((n, s) => n + s, 0);
  const meanSuffix = rows > 0 ? suffixTokens / rows : 0;
  const branchMs = cost.perTokenMs * meanSuffix + cost.perRowMs;
  const chunks = rows > 0 ? branchChunks(cost, meanSuffix, plan) : 1;
  // Packed as the scorer packs them (tokens_in_time): the decode's own cost counts against the step
  // target. Leaving it out put more branches in a decode than the scorer does, and so counted too
  // few decodes: about a tenth too little time for a request of many short branches.
  const perDecode = Math.max(1, Math.floor((plan.stepTargetMs - cost.perDecodeMs) / Math.max(branchMs, 1e-9)));
  // A branch cut into chunks rides behind no prefix and shares no decode: every chunk is one.
  const branchDecodes = chunks > 1 ? rows * chunks : Math.ceil(Math.max(0, rows - 1) / perDecode);
  const decodes = Math.max(1, Math.ceil(work.prefixTokens / plan.prefixChunk)) + branchDecodes;
  return cost.perDecodeMs * decodes + cost.perTokenMs * (work.prefixTokens + suffixTokens) + cost.perRowMs * rows;
}

/** How many of the work's branches fit in `budgetMs` alone (0 when not even its prefix does). */
export function branchesThatFit(cost: DecodeCost, work: WorkShape, plan: DecodePlan, budgetMs: number): number {
  let lo = 0;
  let hi = work.suffixTokens.length;
  const fits = (n: number): boolean =>
    n === 0 || workMs(cost, { prefixTokens: work.prefixTokens, suffixTokens: work.suffixTokens.slice(0, n) }, plan) <= budgetMs;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export type Verdict =
  | { admit: true; ticket: number }
  /** The work alone takes longer than the time it has. */
  | { admit: false; reason: 'too_costly'; workMs: number }
  /** It would fit alone, but not behind what the engine already holds; retry after about waitMs. */
  | { admit: false; reason: 'busy'; workMs: number; finishMs: number; waitMs: number };

interface InFlight {
  tenant: string;
  remainingMs: number;
}

/**
 * The engine's work in hand, by tenant, in estimated milliseconds. Engine time spent since the last
 * look is taken off it as the scorer shares decodes: equally between the tenants with work, then
 * between a tenant's requests; an estimate that ran out before its request finished stays at 0.
 */
export class WorkLedger {
  private readonly inFlight = new Map<number, InFlight>();
  private nextTicket = 1;
  private lastBusyMs: number;

  /** `busyMs`: the engine's total time in decodes so far. */
  constructor(private readonly busyMs: () => number) {
    this.lastBusyMs = busyMs();
  }

  /**
   * Admits work of `workMs` with `budgetMs` left before its deadline (no deadline: any budget of
   * Infinity), and counts it in hand until done(ticket). `stepWaitMs`: how long the decode in
   * progress may hold it before its first turn, while the engine holds any work.
   */
  admit(tenant: string, workMs: number, budgetMs: number, stepWaitMs = 0): Verdict {
    this.settle();
    if (workMs > budgetMs) return { admit: false, reason: 'too_costly', workMs };
    // Processor sharing: while this work runs, every tenant with work (its own included) takes an
    // equal turn, each for at most what it has left; first it waits for the decode in progress.
    let finishMs = workMs + (this.inFlight.size > 0 ? stepWaitMs : 0);
    for (const mine of this.byTenant()) finishMs += Math.min(remaining(mine), workMs);
    if (finishMs > budgetMs) return { admit: false, reason: 'busy', workMs, finishMs, waitMs: finishMs - budgetMs };
    const ticket = this.nextTicket++;
    this.inFlight.set(ticket, { tenant, remainingMs: workMs });
    return { admit: true, ticket };
  }

  done(ticket: number): void {
    this.settle();
    this.inFlight.delete(ticket);
  }

  /** Estimated engine milliseconds in hand. */
  pendingMs(): number {
    this.settle();
    return remaining([...this.inFlight.values()]);
  }

  /** The work in hand, one list per tenant. */
  private byTenant(): InFlight[][] {
    const tenants = new Map<string, InFlight[]>();
    for (const w of this.inFlight.values()) {
      const mine = tenants.get(w.tenant);
      if (mine) mine.push(w);
      else tenants.set(w.tenant, [w]);
    }
    return [...tenants.values()];
  }

  private settle(): void {
    const now = this.busyMs();
    const spent = now - this.lastBusyMs;
    this.lastBusyMs = now;
    if (!(spent > 0)) return;
    const tenants = this.byTenant();
    const perTenant = shareOut(tenants.map(remaining), spent);
    tenants.forEach((mine, i) => {
      const perRequest = shareOut(
        mine.map((w) => w.remainingMs),
        perTenant[i]!,
      );
      mine.forEach((w, j) => (w.remainingMs = Math.max(0, w.remainingMs - perRequest[j]!)));
    });
  }
}

const remaining = (work: readonly InFlight[]): number => work.reduce((n, w) => n + w.remainingMs, 0);

/**
 * What each holding gives up when `amount` is shared out over them in equal turns, a holding that
 * runs out handing the rest of its turn on to the others (the level every holding above it is cut
 * by). One pass in ascending order, not rounds until the amount is used: rounds that stopped at a
 * tolerance left a remainder of 1e-10 ms, which no round could take and every round kept, and the
 * engine's thread spun in them for good (it answered nothing until its watchdog killed it).
 */
export function shareOut(holdings: readonly number[], amount: number): number[] {
  const order = holdings.map((_, i) => i).sort((a, b) => holdings[a]! - holdings[b]!);
  const taken = holdings.map(() => 0);
  let left = Math.max(0, amount);
  order.forEach((i, k) => {
    const take = Math.min(Math.max(0, holdings[i]!), left / (order.length - k));
    taken[i] = take;
    left -= take;
  });
  return taken;
}

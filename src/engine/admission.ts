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
}

/**
 * Work is admitted only where it is reckoned to finish within this share of the time its request
 * has left: the estimate errs both ways, and requests that arrive after it take their turns too.
 */
export const DEADLINE_SHARE = 0.8;

export function isMeasured(cost: DecodeCost): boolean {
  return cost.perTokenMs > 0;
}

/**
 * Engine milliseconds of the work when it runs alone: the prefix in chunks (its first branch rides
 * with the last one), then the other branches packed as many to a decode as fit the step target.
 */
export function workMs(cost: DecodeCost, work: WorkShape, plan: DecodePlan): number {
  const rows = work.suffixTokens.length;
  const suffixTokens = work.suffixTokens.reduce((n, s) => n + s, 0);
  const branchMs = rows > 0 ? cost.perTokenMs * (suffixTokens / rows) + cost.perRowMs : 0;
  // Packed as the scorer packs them (tokens_in_time): the decode's own cost counts against the step
  // target. Leaving it out put more branches in a decode than the scorer does, and so counted too
  // few decodes: about a tenth too little time for a request of many short branches.
  const perDecode = Math.max(1, Math.floor((plan.stepTargetMs - cost.perDecodeMs) / Math.max(branchMs, 1e-9)));
  const decodes = Math.max(1, Math.ceil(work.prefixTokens / plan.prefixChunk)) + Math.ceil(Math.max(0, rows - 1) / perDecode);
  return cost.perDecodeMs * decodes + cost.perTokenMs * (work.prefixTokens + suffixTokens) + cost.perRowMs * rows;
}

/** How many of the work's branches fit in `budgetMs` alone (0 when not even its prefix does). */
export function branchesThatFit(cost: DecodeCost, work: WorkShape, plan: DecodePlan, budgetMs: number): number {
  let lo = 0;
  let hi = work.suffixTokens.length;
  const fits = (n: number): boolean => n === 0 || workMs(cost, { prefixTokens: work.prefixTokens, suffixTokens: work.suffixTokens.slice(0, n) }, plan) <= budgetMs;
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
   * Infinity), and counts it in hand until done(ticket).
   */
  admit(tenant: string, workMs: number, budgetMs: number): Verdict {
    this.settle();
    if (workMs > budgetMs) return { admit: false, reason: 'too_costly', workMs };
    // Processor sharing: while this work runs, every tenant with work (its own included) takes an
    // equal turn, each for at most what it has left.
    let finishMs = workMs;
    for (const ms of this.byTenant().values()) finishMs += Math.min(ms, workMs);
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
    let total = 0;
    for (const w of this.inFlight.values()) total += w.remainingMs;
    return total;
  }

  private byTenant(): Map<string, number> {
    const sums = new Map<string, number>();
    for (const w of this.inFlight.values()) sums.set(w.tenant, (sums.get(w.tenant) ?? 0) + w.remainingMs);
    return sums;
  }

  private settle(): void {
    const now = this.busyMs();
    let spent = now - this.lastBusyMs;
    this.lastBusyMs = now;
    // Shared out in rounds: a tenant whose work runs out hands the rest of its turn to the others.
    for (;;) {
      const open = [...this.byTenant()].filter(([, ms]) => ms > 0);
      if (spent <= 1e-6 || open.length === 0) return;
      const share = spent / open.length;
      for (const [tenant, ms] of open) {
        const take = Math.min(share, ms);
        this.takeFrom(tenant, take);
        spent -= take;
      }
    }
  }

  private takeFrom(tenant: string, ms: number): void {
    const mine = [...this.inFlight.values()].filter((w) => w.tenant === tenant && w.remainingMs > 0);
    let left = ms;
    while (left > 1e-9 && mine.some((w) => w.remainingMs > 0)) {
      const open = mine.filter((w) => w.remainingMs > 0);
      const share = left / open.length;
      for (const w of open) {
        const take = Math.min(share, w.remainingMs);
        w.remainingMs -= take;
        left -= take;
      }
    }
  }
}

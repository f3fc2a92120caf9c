// Failed engine proofs counted per address: past the limit an address is refused before its proof
// is even checked, until its minute is over. The secret is long enough that guessing it is hopeless
// anyway; this keeps a guessing (or misconfigured) caller from costing the engine more than a
// refusal, and its log from filling. Memory is bounded however many addresses try: past
// `capacity` the oldest window is forgotten, which only lets that address try again sooner.

/** Failed proofs an address may make in a minute: an API node with the wrong secret retries every few seconds (remote-host.ts backs off to 5 s), a guesser far faster. */
export const PROOF_FAILURES_PER_MINUTE = 20;
/** Addresses remembered at once: a few hundred kilobytes. */
export const THROTTLE_CAPACITY = 4096;
const WINDOW_MS = 60_000;

export class FailureThrottle {
  /** Insertion order is window order: a window that restarts is moved to the end. */
  private readonly windows = new Map<string, { start: number; failures: number }>();

  constructor(
    private readonly limit = PROOF_FAILURES_PER_MINUTE,
    private readonly capacity = THROTTLE_CAPACITY,
    private readonly windowMs = WINDOW_MS,
  ) {}

  /** Seconds before `key` may try again; 0 when it may now. */
  retryAfter(key: string, now = Date.now()): number {
    const w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs || w.failures < this.limit) return 0;
    return Math.ceil((w.start + this.windowMs - now) / 1000);
  }

  failed(key: string, now = Date.now()): void {
    const w = this.windows.get(key);
    if (w && now - w.start < this.windowMs) {
      w.failures++;
      return;
    }
    this.windows.delete(key);
    for (const [k, old] of this.windows) {
      if (this.windows.size < this.capacity && now - old.start < this.windowMs) break;
      this.windows.delete(k);
    }
    this.windows.set(key, { start: now, failures: 1 });
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.windows.size;
  }
}

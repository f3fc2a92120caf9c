// The one start-up line that tells an operator which limits the server enforces, so a 429 is never
// a surprise. URLs and prices of billing stay out: the line names what refuses calls, not the tariff.
import type { LimitsConfig } from './config.js';

export function limitsLine(l: LimitsConfig): string {
  // With billing on the balance, not the free allowance, decides (see the gate).
  const daily = l.billing ? 'billing on' : l.freeDailyDecisions === 0 ? 'no daily allowance' : `${l.freeDailyDecisions} free decisions per user per day`;
  const monthly = l.monthlyCap === 0 ? 'no monthly cap' : `monthly cap ${l.monthlyCap} per user`;
  return `arbitra limits (${l.preset}): ${l.requestsPerSecond} requests/s and ${l.maxInFlight} in flight per key, ${daily}, ${monthly}`;
}

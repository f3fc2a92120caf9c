// Which engine takes a scoring request when there are several (one per GPU). Each request has a
// home engine, chosen from its prefix by rendezvous hashing, so that a state asked about again
// finds its prefix in that engine's cache; it goes elsewhere only when the queue it would join at
// home is longer than the prefix the cache would save. Removing an engine moves only the prefixes
// whose home it was; adding one takes a fair share from every other.
import type { TextScoreRequest } from './types.js';

export interface Candidate {
  id: number;
  /** Work already waiting on this engine, in the same unit as `prefixWork`. */
  load: number;
}

/**
 * The engine for a request whose prefix is `key` (its parts in order, hashed as one text: a state
 * may be long, so it is never joined into a copy) and costs `prefixWork` to evaluate cold. Each
 * candidate's cost is its load, less the prefix at home; the cheapest wins, and among equals the one
 * ranked higher for this key, so equal loads never make the choice random. With one candidate
 * nothing is hashed: a single engine is the common case.
 */
export function placeRequest(candidates: readonly Candidate[], key: readonly string[], prefixWork: number): number {
  if (candidates.length === 0) throw new Error('placeRequest needs at least one candidate');
  if (candidates.length === 1) return candidates[0]!.id;
  const keyHash = fnv1a(key);
  const ranked = [...candidates].sort((a, b) => rendezvous(keyHash, b.id) - rendezvous(keyHash, a.id));
  // The home engine is ranked first; it alone gets the prefix's saving.
  let best = ranked[0]!;
  let bestCost = best.load - prefixWork;
  for (const c of ranked.slice(1)) {
    if (c.load < bestCost) {
      best = c;
      bestCost = c.load;
    }
  }
  return best.id;
}

/**
 * What a request's home is chosen by: its cache scope, system text and state. A state's home is its
 * account's: another account's identical state is placed as any new text is, and finds nothing of
 * the first account's in that engine's cache anyway (the scorer keeps scopes apart).
 */
export function placementKey(request: Pick<TextScoreRequest, 'cacheScope' | 'system' | 'prefix'>): string[] {
  return [request.cacheScope ?? '', request.system ?? '', request.prefix];
}

/** FNV-1a over the parts with a NUL after each, so ["ab", "c"] and ["a", "bc"] differ. */
function fnv1a(parts: readonly string[]): number {
  let h = 0x811c9dc5;
  for (const text of parts) {
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The rank of engine `id` for a key's hash: a 32-bit mix of both, so near-equal inputs differ in every bit. */
function rendezvous(keyHash: number, id: number): number {
  let h = (keyHash ^ Math.imul(id + 1, 0x9e3779b1)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

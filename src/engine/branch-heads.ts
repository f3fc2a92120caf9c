// Branches that begin alike (the passes of one question, whose options only change order) share a
// head of tokens after the prefix. Scored as one job each group decodes that head once, as a prefix
// of its own that extends the request's prefix, instead of once per branch. The batch-invariant
// kernels make this exact: a token's scores do not depend on how its prompt was cut into decodes.

/** A group of branches scored as one job: its head goes after the request's prefix. */
export interface BranchGroup {
  /** Tokens every member's suffix starts with (empty for a branch that shares nothing). */
  head: Int32Array;
  /** The members' indices in the request, and what follows the head in each. */
  members: { index: number; rest: Int32Array }[];
}

/** A head shorter than this is not worth a job of its own (a decode and a copy of the prefix). */
export const MIN_SHARED_HEAD = 8;

function commonHead(a: Int32Array, b: Int32Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * Groups branch suffixes that share at least `minHead` leading tokens. A branch keeps at least its
 * last token out of the head, where its answer is read. Branches that share less stay together in
 * one group with an empty head. Groups are ordered by their first member.
 */
export function groupBranchHeads(suffixes: readonly Int32Array[], minHead = MIN_SHARED_HEAD): BranchGroup[] {
  const order = suffixes
    .map((_, i) => i)
    .sort((x, y) => {
      const a = suffixes[x]!;
      const b = suffixes[y]!;
      const c = commonHead(a, b);
      if (c < a.length && c < b.length) return a[c]! - b[c]!;
      return a.length - b.length || x - y;
    });
  // Neighbours in sorted order share the longest heads: cut where the shared head gets too short.
  // A run's head is the shortest of its neighbours' common heads, each member's last token kept out.
  const runs: { members: number[]; head: number }[] = [];
  for (const i of order) {
    const run = runs[runs.length - 1];
    const head = run ? Math.min(run.head, commonHead(suffixes[run.members[run.members.length - 1]!]!, suffixes[i]!), suffixes[i]!.length - 1) : 0;
    if (run && head >= minHead) {
      run.members.push(i);
      run.head = head;
    } else {
      runs.push({ members: [i], head: suffixes[i]!.length - 1 });
    }
  }
  const shared: BranchGroup[] = [];
  const alone: BranchGroup = { head: new Int32Array(0), members: [] };
  for (const run of runs) {
    if (run.members.length < 2) {
      alone.members.push({ index: run.members[0]!, rest: suffixes[run.members[0]!]! });
      continue;
    }
    shared.push({
      head: suffixes[run.members[0]!]!.subarray(0, run.head),
      members: run.members.map((index) => ({ index, rest: suffixes[index]!.subarray(run.head) })),
    });
  }
  const groups = alone.members.length > 0 ? [...shared, alone] : shared;
  for (const g of groups) g.members.sort((a, b) => a.index - b.index);
  return groups.sort((a, b) => a.members[0]!.index - b.members[0]!.index);
}

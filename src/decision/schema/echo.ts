// What a 422 may repeat of the request: text cut to a length, and a value of any size shown as a
// preview of bounded size, so that no error item grows with the request it describes.

/** How much of a cut text says that it was cut, and by how much. */
const marker = (omitted: number): string => `…[${omitted} more characters]`;

/**
 * `text`, or its first `max` characters and a marker naming how many more there were. A cut never
 * splits a surrogate pair: half of one would be a lone surrogate in the JSON answer.
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end) + marker(text.length - end);
}

// Every value counts a little besides its text, so that a million empty arrays spend the budget too.
const VALUE_COST = 4;
// A string met when the budget is nearly spent still shows this much: a shorter cut says less than its marker.
const MIN_SHOWN = 16;

/** Where a preview records the members or items it left out. */
export const PREVIEW_MORE = '…';

/**
 * A copy of `value` whose strings (member names too) add up to about `budget` characters: strings
 * cut, and arrays and objects listing the items and members that fit, then one more saying how
 * many were left out. A value within the budget comes back equal to itself. The walk stops where
 * the budget does, so its cost is bounded by the budget, not by the value.
 */
export function previewValue(value: unknown, budget: number): unknown {
  let left = budget;
  const visit = (node: unknown): unknown => {
    left -= VALUE_COST;
    if (typeof node === 'string') {
      const shown = cutText(node, Math.max(left, MIN_SHOWN));
      left -= shown.length;
      return shown;
    }
    if (Array.isArray(node)) {
      const out: unknown[] = [];
      for (let i = 0; i < node.length; i++) {
        if (left <= 0) {
          out.push(`${PREVIEW_MORE}${node.length - i} more items`);
          break;
        }
        out.push(visit(node[i]));
      }
      return out;
    }
    if (node !== null && typeof node === 'object') {
      const out: Record<string, unknown> = {};
      let shown = 0;
      // for-in stops with the budget; Object.keys would list a million members to show three.
      for (const key in node) {
        if (!Object.hasOwn(node, key)) continue;
        if (left <= 0) {
          out[PREVIEW_MORE] = `${countOwn(node) - shown} more members`;
          break;
        }
        const name = cutText(key, Math.max(left, MIN_SHOWN));
        left -= name.length;
        // defineProperty: a member named __proto__ stays a member.
        Object.defineProperty(out, name, { value: visit((node as Record<string, unknown>)[key]), enumerable: true, writable: true, configurable: true });
        shown++;
      }
      return out;
    }
    return node;
  };
  return visit(value);
}

function countOwn(node: object): number {
  return Object.keys(node).length;
}

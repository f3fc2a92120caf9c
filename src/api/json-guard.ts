/// <reference lib="es2024.string" />
// What a JSON body must be beyond what JSON.parse checks: UTF-8 bytes, strings (member names too)
// that are well-formed UTF-16, and arrays and objects nested no deeper than MAX_JSON_DEPTH.
// JSON.parse accepts lone surrogate escapes and any depth (V8's parser does not recurse), but much
// of what runs after it recurses: schema checks, cloning, canonical hashing, JSON.stringify and
// msgpack in the store. Bounding the depth here is what keeps all of them off the stack limit.

/**
 * Arrays and objects nested in a body, the body itself counting as one. Real states (API payloads,
 * documents, chat transcripts) stay within a dozen or two; 64 leaves room for any of them while
 * every recursive step after the check stays two orders of magnitude below V8's stack limit.
 */
export const MAX_JSON_DEPTH = 64;

export interface JsonFault {
  /** Members and indexes from the root to the offending value (for a member name, its object). */
  path: (string | number)[];
  reason: string;
}

export const TOO_DEEP = `arrays and objects nested deeper than ${MAX_JSON_DEPTH} levels`;

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The text of UTF-8 bytes; null when they are not valid UTF-8 (encoded surrogates included). */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return null;
  }
}

/** An array or object waiting to be walked. */
interface Frame {
  node: object;
  /** The root is at depth 1. */
  depth: number;
  parent: Frame | null;
  /** Its member name or index in the parent. */
  key: string | number;
}

const LONE_IN_STRING = 'a string holds a lone UTF-16 surrogate';
const LONE_IN_NAME = 'a member name holds a lone UTF-16 surrogate';

/** The first string with a lone surrogate or container past MAX_JSON_DEPTH in a parsed body, else null. */
export function findJsonFault(root: unknown): JsonFault | null {
  // A loop over an explicit stack: the value may be nested far deeper than the call stack allows.
  // Strings are checked where they are met; only containers wait on the stack.
  const stack: Frame[] = [];
  const visit = (node: unknown, parent: Frame | null, key: string | number): JsonFault | null => {
    if (typeof node === 'string') return node.isWellFormed() ? null : { path: parent ? [...pathOf(parent), key] : [], reason: LONE_IN_STRING };
    if (node !== null && typeof node === 'object') stack.push({ node, depth: (parent?.depth ?? 0) + 1, parent, key });
    return null;
  };
  let fault = visit(root, null, '');
  while (!fault && stack.length > 0) {
    const frame = stack.pop()!;
    const { node } = frame;
    if (frame.depth > MAX_JSON_DEPTH) return { path: pathOf(frame), reason: TOO_DEEP };
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length && !fault; i++) fault = visit(node[i], frame, i);
      continue;
    }
    for (const key of Object.keys(node)) {
      if (!key.isWellFormed()) return { path: pathOf(frame), reason: LONE_IN_NAME };
      fault = visit((node as Record<string, unknown>)[key], frame, key);
      if (fault) break;
    }
  }
  return fault;
}

function pathOf(frame: Frame): (string | number)[] {
  const path: (string | number)[] = [];
  for (let f: Frame | null = frame; f?.parent; f = f.parent) path.push(f.key);
  return path.reverse();
}

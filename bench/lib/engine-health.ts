// What a server says of its engines in GET /health's `engines[]`: each engine's load-time
// determinism check (kernels, deterministic, max_difference, kernels_note) and, where the server
// reports it, the path its kernels resolved to (`path`: flash attention, the KV gather, whether the
// promise covers that path and what it does not cover). A bench records them beside its figures,
// so that a run on a GPU says which path ran; a server without `path` is read all the same.
import { call, json } from './http.js';

/** The path an engine's kernels resolved to at load, as /health's `engines[].path` reports it. */
export interface ResolvedPath {
  flash_attention: boolean;
  kv_gather: boolean;
  covered: boolean;
  uncovered: string[];
}

/** One engine of /health's `engines[]`, the fields a bench records (the names are /health's). */
export interface EngineHealth {
  engine: number;
  status: string;
  kernels: string | null;
  deterministic: boolean | null;
  max_difference: number | null;
  kernels_note?: string;
  path?: ResolvedPath;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function resolvedPath(v: unknown): ResolvedPath | undefined {
  if (!isRecord(v) || typeof v.flash_attention !== 'boolean' || typeof v.kv_gather !== 'boolean' || typeof v.covered !== 'boolean') return undefined;
  const uncovered = Array.isArray(v.uncovered) ? v.uncovered.filter((u): u is string => typeof u === 'string') : [];
  return { flash_attention: v.flash_attention, kv_gather: v.kv_gather, covered: v.covered, uncovered };
}

/** The engines of a /health answer's body, the fields above only; [] when it has none. */
export function engineHealth(body: unknown): EngineHealth[] {
  if (!isRecord(body) || !Array.isArray(body.engines)) return [];
  return body.engines.filter(isRecord).map((e, i) => {
    const path = resolvedPath(e.path);
    return {
      engine: typeof e.engine === 'number' ? e.engine : i,
      status: typeof e.status === 'string' ? e.status : 'unknown',
      kernels: typeof e.kernels === 'string' ? e.kernels : null,
      deterministic: typeof e.deterministic === 'boolean' ? e.deterministic : null,
      max_difference: typeof e.max_difference === 'number' ? e.max_difference : null,
      ...(typeof e.kernels_note === 'string' ? { kernels_note: e.kernels_note } : {}),
      ...(path ? { path } : {}),
    };
  });
}

/** One engine in words, for a bench's setup line: its kernels, its check and the path that ran. */
export function describeEngine(e: EngineHealth): string {
  const check =
    e.deterministic === null
      ? 'not checked'
      : `${e.deterministic ? 'deterministic' : 'NOT deterministic'}${e.max_difference === null ? '' : ` (largest difference ${e.max_difference} nats)`}`;
  const note = e.kernels_note ? `, stock kernels because ${e.kernels_note}` : '';
  const p = e.path;
  const path = p
    ? `flash attention ${p.flash_attention ? 'on' : 'off'}, KV gather ${p.kv_gather ? 'on' : 'off'}, ${
        p.covered ? 'covered by the promise' : `not covered: ${p.uncovered.length > 0 ? p.uncovered.join(', ') : 'no reason given'}`
      }`
    : 'path not reported by this server';
  return `engine ${e.engine}: ${e.kernels ?? 'kernels unknown'} kernels, ${check}${note}; ${path}`;
}

/** Every engine in words, or what stood in their place. */
export function describeEngines(engines: EngineHealth[]): string {
  return engines.length > 0 ? engines.map(describeEngine).join('; ') : 'no engine in /health';
}

/**
 * GET /health until every engine has loaded (its check has run by then: the server says it is
 * listening only after), at most `waitMs`; the engines as last read.
 */
export async function readEngineHealth(url: string, waitMs = 60_000): Promise<EngineHealth[]> {
  const until = Date.now() + waitMs;
  for (;;) {
    const r = await call(`${url}/health`, { timeoutMs: 10_000 });
    const engines = engineHealth(json(r));
    if ((engines.length > 0 && engines.every((e) => e.status !== 'loading')) || Date.now() > until) return engines;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

// Command-line options every load bench takes, so `npm run bench:X -- --model M --no-write` means
// the same thing for each of them.
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { modelFor } from '../../src/config.js';
import { packageRoot } from '../../src/paths.js';

const COMMON = {
  /** What --model takes (a catalogue name, a pulled model's name or hf: reference, a GGUF path); default the service's default model, what users serve. */
  model: { type: 'string' },
  /** Print the RESULTS.md section instead of writing it (trial runs). */
  'no-write': { type: 'boolean', default: false },
  /** Write the section into this file instead of bench/RESULTS.md. */
  results: { type: 'string' },
} as const;

export interface CommonSettings {
  model: string;
  /** null: print only. */
  resultsFile: string | null;
}

/** Parses the common options plus the bench's own; unknown options are an error. */
export function benchArgs<T extends NonNullable<ParseArgsConfig['options']>>(own: T) {
  const values = parseArgs({ options: { ...COMMON, ...own }, strict: true, allowPositionals: false }).values as Record<string, string | boolean | undefined>;
  const root = packageRoot();
  const common: CommonSettings = {
    model: modelFor((values.model as string | undefined) ?? process.env.ARBITRA_MODEL).model,
    resultsFile: values['no-write'] ? null : path.resolve((values.results as string | undefined) ?? path.join(root, 'bench', 'RESULTS.md')),
  };
  return { values, common };
}

/** A numeric option, checked: a typo must not turn into NaN minutes. */
export function numberOption(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got ${JSON.stringify(value)}`);
  return n;
}

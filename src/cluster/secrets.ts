// The secrets a serving process may start with. An operator who copies deploy/env's examples, or
// picks a token a person could remember, publishes the key to the console (which mints API keys) or
// to the engines. Beyond loopback such a secret stops the start; on loopback, where only this machine
// can try it, it is a loud warning, so a developer's first `npm start` still serves.
import { randomBytes } from 'node:crypto';
import { isLoopback } from '../addresses.js';
import { randomBase62 } from '../store/secret.js';
import type { Config } from '../config.js';

/**
 * Every secret must be worth at least this many bits by estimatedBits(). Offline guessing is what
 * sets it: a session cookie is signed with the console token, and on plain TCP an eavesdropper sees
 * the engine proofs' HMACs, so either can be attacked at billions of guesses a second, far past any
 * throttle. 112 bits is NIST SP 800-57's floor for keys in use through 2030: 28 hex digits (so
 * `openssl rand -hex 16` passes with room to spare), or 19 random letters and digits.
 */
export const STRENGTH_FLOOR_BITS = 112;

/** What the example files and tutorials put where a secret goes. */
const PLACEHOLDER =
  /change[-_ .]?me|replace[-_ .]?me|placeholder|example|your[-_ .]?(own[-_ .]?)?(secret|token|password|key)|^(secret|password|token|changeit|admin|test)$/i;

const CLASSES: { pattern: RegExp; size: number }[] = [
  { pattern: /[a-z]/, size: 26 },
  { pattern: /[A-Z]/, size: 26 },
  { pattern: /[0-9]/, size: 10 },
  { pattern: /[^a-zA-Z0-9]/, size: 33 },
];

export function isPlaceholder(value: string): boolean {
  return PLACEHOLDER.test(value.trim());
}

/**
 * An upper bound on what a value is worth to a guesser, in bits: as if each character were drawn at
 * random from the classes the value uses (hex digits alone count 16), except that a run (aaaa, 1234,
 * dcba) counts its first two characters only. A word or a name scores high here and is still weak;
 * the estimate only refuses what is plainly short or plain.
 */
export function estimatedBits(value: string): number {
  if (value.length === 0) return 0;
  const pool = /^[0-9a-f]+$/i.test(value) ? 16 : CLASSES.filter((c) => c.pattern.test(value)).reduce((n, c) => n + c.size, 0);
  let counted = Math.min(2, value.length);
  for (let i = 2; i < value.length; i++) {
    const step = value.charCodeAt(i) - value.charCodeAt(i - 1);
    if (Math.abs(step) > 1 || step !== value.charCodeAt(i - 1) - value.charCodeAt(i - 2)) counted++;
  }
  return counted * Math.log2(pool);
}

/** Why this secret must not serve; null when it may. */
export function weakness(value: string): string | null {
  if (isPlaceholder(value)) return 'it is a placeholder from an example file';
  const bits = estimatedBits(value);
  if (bits < STRENGTH_FLOOR_BITS) return `it is worth about ${Math.floor(bits)} bits against a floor of ${STRENGTH_FLOOR_BITS}`;
  return null;
}

/** The host part of a tcp://, tls:// or postgres:// address. */
function hostOf(address: string): string {
  try {
    return new URL(address).hostname;
  } catch {
    return '';
  }
}

type SecretConfig = Pick<Config, 'host' | 'listen' | 'engines' | 'store' | 'consoleToken' | 'engineSecret' | 'keySecret'>;

interface SecretUse {
  name: string;
  value: string | undefined;
  /** Where a guesser beyond this machine could try it, or null when none can. */
  exposedBy: string | null;
}

/**
 * Each secret with where it is exposed: the console token and the key secret by the HTTP port; the
 * key secret also by a database on another host (API keys are stored as HMACs under it); the engine
 * secret by an engine port or engines beyond loopback; the database's password by its host.
 */
function uses(config: SecretConfig, serving: 'serve' | 'engine', env: NodeJS.ProcessEnv): SecretUse[] {
  const http = serving === 'serve' && !isLoopback(config.host) ? `--host ${config.host}` : null;
  const remoteEngine = config.engines?.find((e) => !isLoopback(hostOf(e)));
  const listen = config.listen && !isLoopback(config.listen.host) ? `--listen ${config.listen.host}` : null;
  const database = /^postgres(ql)?:/.test(config.store) && !isLoopback(hostOf(config.store)) ? `a database at ${hostOf(config.store)}` : null;
  let password: string | undefined;
  try {
    password = decodeURIComponent(new URL(config.store).password) || env.PGPASSWORD || undefined;
  } catch {
    password = undefined;
  }
  return [
    { name: 'ARBITRA_CONSOLE_TOKEN', value: config.consoleToken, exposedBy: http },
    { name: 'ARBITRA_KEY_SECRET', value: config.keySecret, exposedBy: http ?? database },
    { name: 'ARBITRA_ENGINE_SECRET', value: config.engineSecret, exposedBy: listen ?? (remoteEngine ? `--engines ${remoteEngine}` : null) },
    // Its strength is the database's business; a placeholder never is.
    ...(database && password !== undefined ? [{ name: 'the database password', value: password, exposedBy: database }] : []),
  ];
}

export interface SecretVerdict {
  /** One line per secret that stops the start. */
  refused: string[];
  /** One line per weak secret that only this machine can reach. */
  warnings: string[];
}

/** Every set secret of a serving process held to the floor (the database password to "not a placeholder"). */
export function judgeSecrets(config: SecretConfig, serving: 'serve' | 'engine', env: NodeJS.ProcessEnv = process.env): SecretVerdict {
  const verdict: SecretVerdict = { refused: [], warnings: [] };
  const remedy = 'make one with `arbitra secrets generate`';
  for (const use of uses(config, serving, env)) {
    if (use.value === undefined || use.value === '') continue;
    const why = use.name === 'the database password' ? (isPlaceholder(use.value) ? 'it is a placeholder from an example file' : null) : weakness(use.value);
    if (!why) continue;
    if (use.exposedBy) verdict.refused.push(`${use.name} cannot serve beyond loopback (${use.exposedBy}): ${why}; ${remedy}`);
    else verdict.warnings.push(`WARNING: ${use.name} is weak (${why}); it is accepted only because nothing beyond this machine can reach it; ${remedy}`);
  }
  return verdict;
}

/** Fresh values for every secret the env files set, as KEY=VALUE lines. */
export function generateSecrets(): [string, string][] {
  const password = randomBase62(32);
  return [
    // Hex, as `openssl rand -hex 32` makes them: 256 bits each.
    ['ARBITRA_KEY_SECRET', randomBytes(32).toString('hex')],
    ['ARBITRA_ENGINE_SECRET', randomBytes(32).toString('hex')],
    // 43 letters and digits (256 bits), easy to paste into the console's sign-in.
    ['ARBITRA_CONSOLE_TOKEN', randomBase62(43)],
    // The database password is set twice in compose's env files, once for each side.
    ['PGPASSWORD', password],
    ['POSTGRES_PASSWORD', password],
  ];
}

// Server configuration from flags and ARBITRA_* variables (a flag wins over its variable). Every
// invalid value is a ConfigError with a one-line message naming the flag or variable.
import os from 'node:os';
import path from 'node:path';
import { MIN_SECRET_LENGTH } from './engine/rpc/auth.js';
import { formatEngineAddress } from './engine/rpc/address.js';
import { PORT_BOUNDS } from './engine/rpc/port.js';
import type { EngineOptions } from './engine/types.js';
import type { Cidr } from './addresses.js';
import { parseTrustedProxies } from './api/client-address.js';
import type { HttpImplementation } from './api/route.js';
import { DEFAULT_MAX_BODY_BYTES } from './http/pipeline.js';
import { DEFAULT_SHUTDOWN_GRACE_SECONDS } from './http/types.js';
import type { CalibrationMode } from './decision/calibration.js';
import type { PrefixCacheScope } from './api/routes/systemone.js';
import { limitsPreset, loadLimitsConfig, readBool, LIMITS_DEFAULTS, LIMITS_PRESETS, type LimitsConfig } from './limits/config.js';
import { DEFAULT_MODEL, findEntry, type CatalogueEntry } from './models/catalogue.js';
import { pulledByRef } from './models/pull.js';
import { expectedName, ModelRefError, parseModelRef, type ModelRef } from './models/ref.js';
import { findPulled, modelPathOf } from './models/store.js';
import { packageRoot } from './paths.js';
import { DEFAULT_MAX_KEYS_PER_USER } from './store/keys.js';
import type { StoreOptions } from './store/index.js';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** Where the state lives: a postgres:// URL every node shares (--store), else the LMDB environment in dataDir. */
  store: string;
  /** Connections each process may open to PostgreSQL (--store-pool). */
  storePool: number;
  /** How long a dead node's in-flight slots keep counting in PostgreSQL (--slot-lease-seconds); undefined = the store's default. */
  slotLeaseSeconds: number | undefined;
  /** ARBITRA_KEY_SECRET: HMAC key of stored secrets; required with PostgreSQL, the same on every node. */
  keySecret: string | undefined;
  /** Path of the GGUF model file. */
  model: string;
  /** The catalogue model it is, fetched when missing; null for a file named by path. */
  modelEntry: CatalogueEntry | null;
  /** An hf: reference or URL not pulled yet: pulled at start-up, before the model loads. */
  modelPull: ModelRef | null;
  /** HTTP worker processes; 0 runs everything in one process. */
  workers: number;
  /** `--gpus`: one engine per listed device; null: one engine given every device the build sees. */
  gpus: number[] | null;
  /** `--engines`: remote engines (`arbitra engine --listen`) instead of a local one; null: local. */
  engines: string[] | null;
  /** `arbitra engine --listen HOST:PORT`. */
  listen: { host: string; port: number } | null;
  /** ARBITRA_ENGINE_SECRET: proves API nodes and remote engines to each other. */
  engineSecret: string | undefined;
  /** Certificate and key files of a remote engine that serves TLS. */
  engineTls: { cert: string; key: string } | null;
  /** ARBITRA_ENGINE_CA: a certificate authority API nodes trust for tls:// engines, besides the system's. */
  engineCa: string | undefined;
  /** Operator secret of the console routes; undefined leaves them closed (503). */
  consoleToken: string | undefined;
  maxBodyBytes: number;
  /** On SIGTERM, how long requests in flight may still run before their connections are closed (--shutdown-grace-seconds). */
  shutdownGraceSeconds: number;
  /** Extra model aliases, alias → target (a served model id or "default"). */
  modelAliases: Record<string, string>;
  /** Prompt tokens a state may take without the long-context header; null = all the engine holds. */
  contextTokens: number | null;
  /** Peers whose X-Forwarded-For and X-Forwarded-Proto name the client (--trusted-proxies); empty: none. */
  trustedProxies: readonly Cidr[];
  /** The HTTP front (--http): node forces node:http; uws (the default) falls back to it where uWS cannot load. */
  http: HttpImplementation | undefined;
  engine: Partial<EngineOptions>;
  limits: LimitsConfig;
  /** --calibration / ARBITRA_CALIBRATION: which calibration answers are served with (default off). */
  calibration: CalibrationMode;
  /** --prefix-cache-scope / ARBITRA_PREFIX_CACHE_SCOPE: whose prefix cache a state is kept in (default account). */
  prefixCacheScope: PrefixCacheScope;
  /** ARBITRA_SELF_TEST: ask the model a few obvious questions once it is loaded (default on). */
  selfTest: boolean;
  /** Active API keys a user may hold (--max-keys-per-user / ARBITRA_MAX_KEYS_PER_USER). */
  maxKeysPerUser: number;
}

/**
 * Per process: most of a worker's store calls are one short statement, so a few connections keep
 * up, and an 8-worker node then holds at most 40, two of them stay under PostgreSQL's default 100.
 */
const DEFAULT_STORE_POOL = 4;

interface Setting {
  flag: string;
  env: string;
  help: string;
  /** false for switches like --help that take no value */
  takesValue?: boolean;
}

/** Flags of `arbitra serve` with their variables; the CLI help is generated from this table. */
export const SERVE_SETTINGS: readonly Setting[] = [
  { flag: '--host', env: 'ARBITRA_HOST', help: 'address to listen on (default 127.0.0.1)' },
  { flag: '--port', env: 'ARBITRA_PORT', help: 'TCP port, 0 picks a free one (default 8080)' },
  { flag: '--data-dir', env: 'ARBITRA_DATA_DIR', help: 'LMDB data folder (default ./data)' },
  {
    flag: '--store-pool',
    env: 'ARBITRA_STORE_POOL',
    help: `PostgreSQL connections per process; a node opens up to (workers + 2) times as many, and all nodes together must stay under the server's max_connections (default ${DEFAULT_STORE_POOL})`,
  },
  {
    flag: '--slot-lease-seconds',
    env: 'ARBITRA_SLOT_LEASE_SECONDS',
    help: "PostgreSQL: how long the in-flight slots of a node that died keep counting against their keys' limits; a live node renews its own every third of it (default 30)",
  },
  {
    flag: '--store',
    env: 'ARBITRA_STORE_URL',
    help: 'postgres://user:password@host:port/db: keep the state in PostgreSQL, shared by every node pointed at it (needs ARBITRA_KEY_SECRET); default: LMDB in --data-dir',
  },
  {
    flag: '--model',
    env: 'ARBITRA_MODEL',
    help: `catalogue model name, pulled model name, hf:ORG/REPO[:QUANT] or URL (pulled first when missing; see arbitra models list) or GGUF file path (default ${DEFAULT_MODEL.name}, fetched when missing)`,
  },
  { flag: '--workers', env: 'ARBITRA_WORKERS', help: 'HTTP worker processes; 0 = one process (default: CPU cores)' },
  {
    flag: '--http',
    env: 'ARBITRA_HTTP',
    help: 'HTTP front: "uws" (uWebSockets.js, a binary republished on npm that could not be matched to an upstream release: docs/security.md) or "node" (Node\'s own node:http, the same routes and limits) (default uws, node where uWS cannot load)',
  },
  { flag: '--max-body-bytes', env: 'ARBITRA_MAX_BODY_BYTES', help: 'largest request body, else 413 (default 1048576)' },
  {
    flag: '--trusted-proxies',
    env: 'ARBITRA_TRUSTED_PROXIES',
    help: "comma-separated addresses or CIDR blocks of the proxies in front (e.g. HAProxy's address): from them, and only them, X-Forwarded-For names the client every per-address limit counts and X-Forwarded-Proto says whether it came over TLS (default none: both headers are ignored)",
  },
  {
    flag: '--shutdown-grace-seconds',
    env: 'ARBITRA_SHUTDOWN_GRACE_SECONDS',
    help: `on SIGTERM, new connections are refused and requests in flight answered for up to this long before the server stops; a service manager or container runtime must wait longer (default ${DEFAULT_SHUTDOWN_GRACE_SECONDS})`,
  },
  {
    flag: '--context-tokens',
    env: 'ARBITRA_CONTEXT_TOKENS',
    help: 'prompt tokens allowed without the long-context header (default: all the engine holds, see --long-ctx-size)',
  },
  {
    flag: '--kv-layout',
    env: 'ARBITRA_KV_LAYOUT',
    help: 'engine KV cache: "copied" (one stream per sequence, a branch copies its prefix: scores never depend on the load) or "shared" (one pool, branches share their prefix\'s cells: memory follows the tokens in use) (default copied)',
  },
  {
    flag: '--kv-cells',
    env: 'ARBITRA_KV_CELLS',
    help: "shared layout: KV cells in the pool, the most tokens in flight (default: the model's training context up to 32768, plus one batch)",
  },
  {
    flag: '--kernels',
    env: 'ARBITRA_KERNELS',
    help: 'CPU kernels: "exact" (batch-invariant: a score never depends on the load or on how a prompt was cut into decodes, at about llama.cpp\'s speed) or "fast" (llama.cpp\'s stock kernels, chosen by batch shape: scores move with the load) (default exact)',
  },
  {
    flag: '--ctx-size',
    env: 'ARBITRA_CTX_SIZE',
    help: 'copied layout: engine KV cells per sequence of the main lane, which serves every prompt that fits (default 4096)',
  },
  {
    flag: '--long-ctx-size',
    env: 'ARBITRA_LONG_CTX_SIZE',
    help: "KV cells per sequence of the long lane for longer prompts, capped at the model's training context; 0 = no long lane (default 32768)",
  },
  { flag: '--long-sequences', env: 'ARBITRA_LONG_SEQUENCES', help: 'sequences of the long lane (default 2)' },
  { flag: '--threads', env: 'ARBITRA_THREADS', help: 'engine CPU threads' },
  { flag: '--gpu-layers', env: 'ARBITRA_GPU_LAYERS', help: 'layers offloaded to the GPU (CUDA builds)' },
  {
    flag: '--flash-attention',
    env: 'ARBITRA_FLASH_ATTENTION',
    help: 'flash attention: "auto" (llama.cpp decides by device), "on" or "off"; exact kernels ask for it on unless told "off", which leaves their promise (/health: deterministic false, with the reason) (default auto)',
  },
  {
    flag: '--cpu-variant',
    env: 'ARBITRA_CPU_VARIANT',
    help: 'the CPU backend\'s instruction-set variant: "auto" (the best this processor runs) or a name the build carries ("haswell", "zen4"); nodes that must give the same bits pin the same one (default auto)',
  },
  {
    flag: '--engines',
    env: 'ARBITRA_ENGINES',
    help: 'remote engines instead of a local one: host:port (or tls://host:port) of each `arbitra engine --listen`, comma-separated; needs ARBITRA_ENGINE_SECRET',
  },
  { flag: '--listen', env: 'ARBITRA_ENGINE_LISTEN', help: 'arbitra engine: host:port to serve the model on to API nodes; needs ARBITRA_ENGINE_SECRET' },
  {
    flag: '--tls-cert',
    env: 'ARBITRA_ENGINE_TLS_CERT',
    help: 'arbitra engine: PEM certificate file; with --tls-key the engine serves TLS (API nodes then name it tls://host:port)',
  },
  { flag: '--tls-key', env: 'ARBITRA_ENGINE_TLS_KEY', help: 'arbitra engine: PEM private key file of --tls-cert' },
  {
    flag: '--gpus',
    env: 'ARBITRA_GPUS',
    help: 'one engine (one model copy) per listed GPU, e.g. 0,1; requests go to the least busy, a state asked again to the one that cached it (default: one engine on every GPU the build sees)',
  },
  { flag: '--max-sequences', env: 'ARBITRA_MAX_SEQUENCES', help: 'engine parallel sequences' },
  {
    flag: '--calibration',
    env: 'ARBITRA_CALIBRATION',
    help: '"off": probabilities as the model gives them; "fitted" (or "on"): the newest calibration `arbitra calibrate` fitted for the served model; "preset": the calibration shipped for the served model (the default model has one) (default off)',
  },
  {
    flag: '--prefix-cache-scope',
    env: 'ARBITRA_PREFIX_CACHE_SCOPE',
    help: '"account": a state is cached for the keys of its account only, and another account\'s identical state is decoded cold (only the prompt frame\'s fixed head is shared); "global": one cache for every key, for a server with one trusted owner, since how fast a state is answered then tells whether someone sent it before (default account)',
  },
  { flag: '--batch-size', env: 'ARBITRA_BATCH_SIZE', help: 'most tokens per engine decode call' },
  {
    flag: '--max-step-ms',
    env: 'ARBITRA_MAX_STEP_MS',
    help: "while one key's work is all the engine holds, a decode carries as much of it as fits this many milliseconds (by the measured cost; its first piece goes whole); another key's request arriving meanwhile waits for at most one such decode, and decodes are then cut to 250 ms again (default 1000)",
  },
  {
    flag: '--liveness-seconds',
    env: 'ARBITRA_ENGINE_LIVENESS_SECONDS',
    help: 'an engine that holds work and finishes no decode for this long, plus ten times what the decode in progress should take, is wedged: /health says so and it is restarted (default 30)',
  },
  {
    flag: '--max-keys-per-user',
    env: 'ARBITRA_MAX_KEYS_PER_USER',
    help: `active (unrevoked) API keys a user may hold, else 409 (default ${DEFAULT_MAX_KEYS_PER_USER})`,
  },
  {
    flag: '--limits',
    env: 'ARBITRA_LIMITS',
    help: `limits preset: ${Object.keys(LIMITS_PRESETS).join(' or ')}; each limit variable overrides it (default ${LIMITS_DEFAULTS.preset})`,
  },
];

/** Variables without a flag (secrets stay out of the process list). */
export const ENV_ONLY_SETTINGS: readonly { env: string; help: string }[] = [
  { env: 'ARBITRA_CONSOLE_TOKEN', help: 'operator secret for /v1/console/* (unset: console routes answer 503)' },
  { env: 'ARBITRA_MODELS_DIR', help: 'folder of catalogue and pulled models (default: models/ in the package)' },
  { env: 'HF_TOKEN', help: 'Hugging Face token for gated repositories (models pull, --model hf:...)' },
  { env: 'HF_ENDPOINT', help: 'a Hugging Face mirror to pull from (default https://huggingface.co)' },
  { env: 'ARBITRA_MODEL_ALIASES', help: 'extra model aliases, e.g. "fast=default,eu-small=default"' },
  { env: 'ARBITRA_SELF_TEST', help: 'off: skip the obvious-questions check after the model loads (default on)' },
  {
    env: 'ARBITRA_DETERMINISM_CHECK',
    help: 'off: skip the check at load that a probe scores the same alone, crowded and after a cached head, and that exact kernels agree with the stock ones (default on; /health then says deterministic: null)',
  },
  {
    env: 'ARBITRA_ENGINE_SECRET',
    help: `shared by API nodes and remote engines (at least ${MIN_SECRET_LENGTH} characters; beyond loopback no placeholder and 112 bits: arbitra secrets generate); never sent: every call proves it by an HMAC over its message and the engine it is for, checked before the message is read, and every reply by an HMAC over its own bytes`,
  },
  { env: 'ARBITRA_ENGINE_CA', help: "PEM file of a certificate authority to trust for tls:// engines, besides the system's" },
  { env: 'ARBITRA_IDEMPOTENCY_TTL_SECONDS', help: 'idempotency entry lifetime (default 86400)' },
  { env: 'ARBITRA_IDEMPOTENCY_MAX', help: "idempotency entries kept per key, the key's oldest evicted (default 2048)" },
  {
    env: 'ARBITRA_IDEMPOTENCY_MAX_TOTAL',
    help: 'idempotency entries kept for all keys together, the oldest of any evicted past it; at least ARBITRA_IDEMPOTENCY_MAX (default 65536)',
  },
  { env: 'ARBITRA_TRACES_MAX', help: 'traces one key may keep at once; past it POST /v1/traces answers 429 quota_exceeded (default 100000)' },
  { env: 'ARBITRA_TRACES_MAX_BYTES', help: 'bytes of traces (as JSON) one key may keep at once (default 67108864, 64 MiB)' },
  { env: 'ARBITRA_FAULT_ENGINE_STALL', help: "tests only: the engine's scheduler stops after this many decodes, to show a wedge healing (default unset)" },
];

/** Reads `--flag value` / `--flag=value` pairs; an unknown flag or a missing value is an error. */
export function parseFlags(argv: readonly string[], known: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf('=');
    const flag = eq < 0 ? arg : arg.slice(0, eq);
    if (!known.includes(flag)) throw new ConfigError(`unknown option ${flag} (see arbitra --help)`);
    let value: string | undefined;
    if (eq >= 0) value = arg.slice(eq + 1);
    else {
      value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) throw new ConfigError(`${flag} needs a value`);
      i++;
    }
    out[flag] = value;
  }
  return out;
}

export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Config {
  const flags = parseFlags(
    argv,
    SERVE_SETTINGS.map((s) => s.flag),
  );
  const raw = (flag: string): { value: string; source: string } | undefined => {
    const setting = SERVE_SETTINGS.find((s) => s.flag === flag)!;
    if (flags[flag] !== undefined) return { value: flags[flag], source: flag };
    const fromEnv = env[setting.env];
    if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, source: setting.env };
    return undefined;
  };
  const int = (flag: string, min: number, max: number): number | undefined => {
    const r = raw(flag);
    if (!r) return undefined;
    if (!/^\d+$/.test(r.value.trim()) || Number(r.value) < min || Number(r.value) > max) {
      throw new ConfigError(`${r.source} must be an integer from ${min} to ${max}, got ${JSON.stringify(r.value)}`);
    }
    return Number(r.value);
  };

  const choice = <T extends string>(flag: string, values: readonly T[]): T | undefined => {
    const r = raw(flag);
    if (!r) return undefined;
    if (!values.includes(r.value as T))
      throw new ConfigError(`${r.source} must be ${values.map((v) => JSON.stringify(v)).join(' or ')}, got ${JSON.stringify(r.value)}`);
    return r.value as T;
  };

  const host = raw('--host')?.value ?? '127.0.0.1';
  const { model, modelEntry, modelPull } = modelFor(raw('--model')?.value, env);
  const engine: Partial<EngineOptions> = {};
  const engineKnobs: [string, 'contextSize' | 'threads' | 'maxSequences' | 'batchSize' | 'kvCells' | 'maxStepMs', number][] = [
    ['--kv-cells', 'kvCells', 1 << 24],
    ['--ctx-size', 'contextSize', 1 << 24],
    ['--threads', 'threads', 1024],
    ['--max-sequences', 'maxSequences', 4096],
    ['--batch-size', 'batchSize', 1 << 20],
    ['--max-step-ms', 'maxStepMs', 600_000],
  ];
  for (const [flag, key, max] of engineKnobs) {
    const v = int(flag, 1, max);
    if (v !== undefined) engine[key] = v;
  }
  const longContext = int('--long-ctx-size', 0, 1 << 24);
  if (longContext !== undefined) engine.longContextSize = longContext;
  const longSequences = int('--long-sequences', 2, 256);
  if (longSequences !== undefined) engine.longSequences = longSequences;
  const kvLayout = choice('--kv-layout', ['copied', 'shared'] as const);
  if (kvLayout !== undefined) engine.kvLayout = kvLayout;
  const kernels = choice('--kernels', ['exact', 'fast'] as const);
  if (kernels !== undefined) engine.kernels = kernels;
  const gpuLayers = int('--gpu-layers', 0, 100_000);
  if (gpuLayers !== undefined) engine.gpuLayers = gpuLayers;
  const flashAttention = choice('--flash-attention', ['auto', 'on', 'off'] as const);
  if (flashAttention !== undefined) engine.flashAttention = flashAttention;
  const cpuVariant = raw('--cpu-variant');
  if (cpuVariant) {
    // Which names exist is the build's to say (the engine refuses an unknown one with the list).
    if (!/^[a-z0-9_.]{1,32}$/.test(cpuVariant.value))
      throw new ConfigError(`${cpuVariant.source} must be "auto" or a CPU variant's name, got ${JSON.stringify(cpuVariant.value)}`);
    engine.cpuVariant = cpuVariant.value;
  }
  const liveness = int('--liveness-seconds', 1, 86_400);
  if (liveness !== undefined) engine.livenessSeconds = liveness;
  const stall = env.ARBITRA_FAULT_ENGINE_STALL;
  if (stall) {
    if (!/^\d+$/.test(stall) || Number(stall) < 1) throw new ConfigError(`ARBITRA_FAULT_ENGINE_STALL must be a positive integer, got ${JSON.stringify(stall)}`);
    engine.faultStallAfterDecodes = Number(stall);
  }

  const workers = int('--workers', 0, 1024) ?? os.availableParallelism();
  const gpus = gpuList(raw('--gpus'));
  if (gpus && workers === 0) throw new ConfigError('--gpus starts one engine process per GPU, which needs --workers 1 or more');
  const engines = engineList(raw('--engines'));
  if (engines && gpus) throw new ConfigError('--gpus starts local engines and --engines uses remote ones: give one of them');
  if (engines && workers === 0) throw new ConfigError('--engines needs --workers 1 or more: the single-process mode holds its engine in-process');
  if (engines && workers >= PORT_BOUNDS.perAddress) {
    throw new ConfigError(
      `--engines with --workers ${workers}: an engine takes ${PORT_BOUNDS.perAddress} connections from one address, and this node opens one per worker and one for its primary; give --workers ${PORT_BOUNDS.perAddress - 1} or fewer`,
    );
  }
  const listenRaw = raw('--listen');
  const listen = listenRaw ? hostPort(listenRaw.value, listenRaw.source) : null;
  const engineSecret = env.ARBITRA_ENGINE_SECRET || undefined;
  if ((engines || listen) && !engineSecret)
    throw new ConfigError(`${engines ? '--engines' : '--listen'} needs ARBITRA_ENGINE_SECRET, the same on every API node and engine`);
  if (engineSecret !== undefined && engineSecret.length < MIN_SECRET_LENGTH)
    throw new ConfigError(`ARBITRA_ENGINE_SECRET must be at least ${MIN_SECRET_LENGTH} characters`);
  const dataDir = path.resolve(raw('--data-dir')?.value ?? 'data');
  const storeUrl = raw('--store');
  if (storeUrl && !isPostgresLocation(storeUrl.value)) {
    throw new ConfigError(
      `${storeUrl.source} must be a postgres:// or postgresql:// URL, got ${JSON.stringify(storeUrl.value.replace(/\/\/[^@/]*@/, '//…@'))}`,
    );
  }
  const keySecret = env.ARBITRA_KEY_SECRET || undefined;
  if (storeUrl && !keySecret) throw new ConfigError(`${storeUrl.source} needs ARBITRA_KEY_SECRET (at least 32 characters), the same on every node`);
  if (keySecret !== undefined && keySecret.length < 32) throw new ConfigError('ARBITRA_KEY_SECRET must be at least 32 characters');
  const tlsCert = raw('--tls-cert')?.value;
  const tlsKey = raw('--tls-key')?.value;
  if (Boolean(tlsCert) !== Boolean(tlsKey)) throw new ConfigError('--tls-cert and --tls-key go together');

  let limits: LimitsConfig;
  const calibration = calibrationMode(raw('--calibration'));
  let selfTest: boolean;
  try {
    const preset = raw('--limits');
    limits = loadLimitsConfig(env, preset && limitsPreset(preset.value, preset.source));
    selfTest = readBool(env, 'ARBITRA_SELF_TEST', true);
    engine.checkDeterminism = readBool(env, 'ARBITRA_DETERMINISM_CHECK', true);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }

  const consoleToken = env.ARBITRA_CONSOLE_TOKEN;
  if (consoleToken !== undefined && consoleToken !== '' && consoleToken.length < 16) {
    throw new ConfigError('ARBITRA_CONSOLE_TOKEN must be at least 16 characters');
  }

  return {
    host,
    port: int('--port', 0, 65535) ?? 8080,
    dataDir,
    store: storeUrl?.value ?? dataDir,
    storePool: int('--store-pool', 1, 1000) ?? DEFAULT_STORE_POOL,
    slotLeaseSeconds: int('--slot-lease-seconds', 3, 86_400),
    keySecret,
    model,
    modelEntry,
    modelPull,
    workers,
    gpus,
    engines,
    listen,
    engineSecret,
    engineTls: tlsCert && tlsKey ? { cert: path.resolve(tlsCert), key: path.resolve(tlsKey) } : null,
    engineCa: env.ARBITRA_ENGINE_CA ? path.resolve(env.ARBITRA_ENGINE_CA) : undefined,
    consoleToken: consoleToken || undefined,
    maxBodyBytes: int('--max-body-bytes', 1, 1 << 30) ?? DEFAULT_MAX_BODY_BYTES,
    shutdownGraceSeconds: int('--shutdown-grace-seconds', 0, 86_400) ?? DEFAULT_SHUTDOWN_GRACE_SECONDS,
    modelAliases: parseAliases(env.ARBITRA_MODEL_ALIASES),
    contextTokens: int('--context-tokens', 16, 1 << 24) ?? null,
    trustedProxies: trustedProxyList(raw('--trusted-proxies')),
    http: choice('--http', ['uws', 'node'] as const),
    engine,
    limits,
    calibration,
    prefixCacheScope: choice('--prefix-cache-scope', ['account', 'global'] as const) ?? 'account',
    selfTest,
    maxKeysPerUser: int('--max-keys-per-user', 1, 1_000_000) ?? DEFAULT_MAX_KEYS_PER_USER,
  };
}

/** Where catalogue models live: ARBITRA_MODELS_DIR, else the package's models/ folder. */
export function modelsDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.ARBITRA_MODELS_DIR ? path.resolve(env.ARBITRA_MODELS_DIR) : path.join(packageRoot(), 'models');
}

export interface ModelChoice {
  /** The GGUF file to load (part 1 of a split model); for a pull still to come, where it will most likely land. */
  model: string;
  modelEntry: CatalogueEntry | null;
  modelPull: ModelRef | null;
}

/**
 * The model a --model value names, without the network: a catalogue entry (the default when
 * absent), a pulled model by its name, an `hf:` reference or URL (the pulled model when a pull by
 * it finished, else a pull to make at start-up), or a file path.
 */
export function modelFor(value: string | undefined, env: NodeJS.ProcessEnv = process.env): ModelChoice {
  const entry = value === undefined ? DEFAULT_MODEL : findEntry(value);
  const dir = modelsDir(env);
  if (entry) return { model: path.join(dir, entry.file), modelEntry: entry, modelPull: null };
  let ref: ModelRef | null;
  try {
    ref = parseModelRef(value!);
  } catch (err) {
    if (err instanceof ModelRefError) throw new ConfigError(`--model: ${err.message}`);
    throw err;
  }
  const pulled = ref ? pulledByRef(dir, ref) : findPulled(dir, value!);
  if (pulled) return { model: modelPathOf(dir, pulled), modelEntry: null, modelPull: null };
  if (ref) return { model: path.join(dir, expectedName(ref), `${expectedName(ref)}.gguf`), modelEntry: null, modelPull: ref };
  return { model: path.resolve(value!), modelEntry: null, modelPull: null };
}

function parseAliases(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!text) return out;
  for (const part of text.split(',')) {
    const m = /^\s*([A-Za-z0-9][A-Za-z0-9._:-]*)\s*=\s*([A-Za-z0-9][A-Za-z0-9._:-]*)\s*$/.exec(part);
    if (!m) throw new ConfigError(`ARBITRA_MODEL_ALIASES must be a comma-separated list of alias=model, got ${JSON.stringify(part)}`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

/** How every serving process opens the LMDB store. */
export function storeOptions(config: Config): StoreOptions {
  return {
    keySecret: config.keySecret,
    poolSize: config.storePool,
    slotLeaseSeconds: config.slotLeaseSeconds,
    idempotencyTtlSeconds: config.limits.idempotencyTtlSeconds,
    idempotencyMax: config.limits.idempotencyMax,
    idempotencyMaxTotal: config.limits.idempotencyMaxTotal,
    maxKeysPerUser: config.maxKeysPerUser,
  };
}

const CALIBRATION_MODES = new Map<string, CalibrationMode>([
  ...['off', 'no', 'false', '0'].map((v) => [v, 'off'] as const),
  // ARBITRA_CALIBRATION=on predates the preset and meant the newest fitted calibration.
  ...['fitted', 'on', 'yes', 'true', '1'].map((v) => [v, 'fitted'] as const),
  ['preset', 'preset'],
]);

function calibrationMode(r: { value: string; source: string } | undefined): CalibrationMode {
  if (!r) return 'off';
  const mode = CALIBRATION_MODES.get(r.value.trim().toLowerCase());
  if (!mode) throw new ConfigError(`${r.source} must be "off", "fitted" (or "on") or "preset", got ${JSON.stringify(r.value)}`);
  return mode;
}

/** "10.0.1.5,fd00::/64" → the blocks whose forwarding headers are believed. */
function trustedProxyList(r: { value: string; source: string } | undefined): Cidr[] {
  if (!r) return [];
  try {
    return parseTrustedProxies(r.value);
  } catch (err) {
    throw new ConfigError(`${r.source}: ${(err as Error).message}`);
  }
}

const MAX_GPUS = 64;

/** "0,1,3" → [0, 1, 3]: distinct device indexes, each an engine. */
function gpuList(r: { value: string; source: string } | undefined): number[] | null {
  if (!r) return null;
  const items = r.value.split(',').map((v) => v.trim());
  if (items.some((v) => !/^\d{1,3}$/.test(v) || Number(v) >= MAX_GPUS)) {
    throw new ConfigError(`${r.source} must be a comma-separated list of GPU indexes from 0 to ${MAX_GPUS - 1}, got ${JSON.stringify(r.value)}`);
  }
  const devices = items.map(Number);
  if (new Set(devices).size !== devices.length) throw new ConfigError(`${r.source} names a GPU twice: ${JSON.stringify(r.value)}`);
  return devices;
}

/** "host:port", "[v6]:port": a port from 1 to 65535 on a named host. */
function hostPort(text: string, source: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:\s,]+):(\d{1,5})$/.exec(text.trim());
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) throw new ConfigError(`${source} must be host:port, got ${JSON.stringify(text)}`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

/** "a:1,tls://b:2" → ["tcp://a:1", "tls://b:2"]: each engine's address as the workers are told it. */
function engineList(r: { value: string; source: string } | undefined): string[] | null {
  if (!r) return null;
  const addresses = r.value.split(',').map((item) => {
    const m = /^(tcp|tls):\/\/(.*)$/.exec(item.trim());
    const { host, port } = hostPort(m ? m[2]! : item, r.source);
    return formatEngineAddress(host, port, m?.[1] === 'tls');
  });
  if (new Set(addresses).size !== addresses.length) throw new ConfigError(`${r.source} names an engine twice: ${JSON.stringify(r.value)}`);
  return addresses;
}

/** A PostgreSQL connection URL that parses; the store backend is chosen by this scheme. */
function isPostgresLocation(text: string): boolean {
  if (!/^postgres(ql)?:\/\//.test(text)) return false;
  try {
    new URL(text);
    return true;
  } catch {
    return false;
  }
}

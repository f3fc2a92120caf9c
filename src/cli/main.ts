#!/usr/bin/env node
// The `arbitra` command: serve, and the operator's key commands. Operator mistakes (bad flag, port
// in use, unusable data dir) end in one line on stderr and a non-zero exit, never a stack trace.
import cluster from 'node:cluster';
import { ConfigError, ENV_ONLY_SETTINGS, SERVE_SETTINGS, loadConfig, modelFor, parseFlags, type Config } from '../config.js';
import { StartupError, openConfiguredStore, prepareStore } from '../cluster/preflight.js';
import { limitsLine } from '../limits/summary.js';
import { isValidEmail } from '../api/auth.js';
import type { Store } from '../store/index.js';
import { modelsCommand, ModelsUsageError } from './models.js';
import { calibrate, calibrateFlags, CalibrateError } from './calibrate.js';
import { generateSecrets, judgeSecrets } from '../cluster/secrets.js';
import fs from 'node:fs';

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** An error whose message is the whole story; printed as one line, exit status 2 for usage. */
class UsageError extends Error {}

export function helpText(): string {
  const width = Math.max(...SERVE_SETTINGS.map((s) => s.flag.length + 1 + s.env.length)) + 2;
  const flags = SERVE_SETTINGS.map((s) => `  ${`${s.flag}/${s.env}`.padEnd(width + 1)}${s.help}`).join('\n');
  const envs = ENV_ONLY_SETTINGS.map((s) => `  ${s.env.padEnd(width + 1)}${s.help}`).join('\n');
  return `arbitra: self-hosted typed decision service

Usage:
  arbitra serve [options]                       serve the HTTP API
  arbitra engine --listen HOST:PORT [options]   serve the model to API nodes elsewhere
                                                (arbitra serve --engines HOST:PORT,...); takes
                                                the engine options below and ARBITRA_ENGINE_SECRET
  arbitra keys create --email E [--name N]      create an API key for user E (creating the user);
                                                prints the secret once, on stdout
  arbitra keys list --email E                   list user E's keys (never the secrets)
  arbitra keys revoke ID                        revoke a key at once, on every worker
  arbitra calibrate [--model M] [--file F]      fit a calibration of model M (default: the default
           [--out PRESET]                       model) from traces joined with retained requests, or
                                                from a JSONL file of answers and truths; prints
                                                held-out log loss or RPS, ECE and Brier, saves only
                                                an improvement (--out: to a preset file to ship)
  arbitra models list [--fits]                  the catalogue, the pulled models with their source
                                                and digest, and recommended models by GPU memory
                                                (--fits: read this machine's GPUs, mark what fits)
  arbitra models pull NAME|hf:ORG/REPO[:QUANT]|hf:ORG/REPO/FILE.gguf|URL [--name N] [--sha256 HEX]
                                                fetch a catalogue model, or a GGUF from Hugging Face
                                                (HF_TOKEN, HF_ENDPOINT) or a URL: resumable, sha256
                                                verified; serve --model takes the same and pulls it
  arbitra models rm NAME                        remove a pulled (or catalogue) model
  arbitra secrets generate                      print fresh secrets for the env files (KEY=VALUE
                                                lines); a placeholder or weak secret stops a server
                                                that listens beyond loopback
  arbitra --help                                this text

Key commands take --data-dir (or ARBITRA_DATA_DIR) or --store (or ARBITRA_STORE_URL) and are safe
while the server runs.

Options of serve (a flag wins over its variable):
${flags}

Variables without a flag:
${envs}
  Limits (ARBITRA_RATE_LIMIT_RPS, ARBITRA_MAX_IN_FLIGHT, ARBITRA_FREE_DAILY_DECISIONS,
  ARBITRA_MONTHLY_CAP, ARBITRA_BILLING, ARBITRA_IP_LIMIT_PER_MINUTE, ARBITRA_SECRET_FAILURE_LIMIT,
  ARBITRA_RETENTION_DAYS, ...)
  are documented in docs/operations.md ("Limits and billing").
`;
}

async function serve(argv: string[]): Promise<void> {
  const config = loadConfig(argv, process.env);
  if (config.listen) throw new UsageError('--listen is an option of arbitra engine, not of serve');
  // Loaded on demand so the key commands never load the engine or the native HTTP module.
  if (cluster.isWorker) return (await import('../cluster/worker.js')).runWorker(config, log);
  holdSecrets(config, 'serve');
  const running =
    config.workers === 0
      ? await (await import('../cluster/single.js')).runSingle(config, log)
      : await (await import('../cluster/primary.js')).runPrimary(config, log);
  log(limitsLine(config.limits));
  stopOnSignals(running);
}

async function engine(argv: string[]): Promise<void> {
  const config = loadConfig(argv, process.env);
  if (config.engines || config.gpus)
    throw new UsageError('arbitra engine serves one model copy: --engines and --gpus are options of serve (set CUDA_VISIBLE_DEVICES to pick the GPU)');
  holdSecrets(config, 'engine');
  stopOnSignals(await (await import('../cluster/engine-node.js')).runEngineNode(config, log));
}

/** Stops a start whose secrets would be guessable beyond this machine; warns when only this machine can reach them. */
function holdSecrets(config: Config, serving: 'serve' | 'engine'): void {
  const { refused, warnings } = judgeSecrets(config, serving);
  if (refused.length > 0) throw new ConfigError(refused.join('\narbitra: '));
  for (const line of warnings) log(`arbitra: ${line}`);
}

async function secrets(argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  if (!(action === 'generate' && rest.length === 0)) throw new UsageError('usage: arbitra secrets generate');
  const lines = generateSecrets().map(([name, value]) => `${name}=${value}`);
  process.stdout.write(
    `# Fresh secrets from arbitra secrets generate: copy each line into the env files that set it (deploy/README.md).\n${lines.join('\n')}\n`,
  );
}

/** SIGTERM and Ctrl-C stop what runs, once; a failed stop exits non-zero. */
function stopOnSignals(running: { stop(): Promise<void> }): void {
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log(`arbitra: ${signal} received, shutting down`);
    running.stop().then(
      () => process.exit(0),
      (err: Error) => {
        log(`arbitra: shutdown failed: ${err.message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

async function withStore<T>(flags: Record<string, string>, fn: (store: Store) => Promise<T>): Promise<T> {
  // The server's own store and its settings (keys per user, idempotency, the key secret), from the same environment.
  const config = loadConfig(
    (['--data-dir', '--store'] as const).flatMap((flag) => (flags[flag] === undefined ? [] : [flag, flags[flag]])),
    process.env,
  );
  await prepareStore(config);
  const store = await openConfiguredStore(config);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

function requireEmail(flags: Record<string, string>): string {
  const email = flags['--email'];
  if (!email) throw new UsageError('--email is required');
  if (!isValidEmail(email)) throw new UsageError(`--email ${JSON.stringify(email)} is not a valid email address`);
  return email;
}

async function keys(argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  if (action === 'create') {
    const flags = parseFlags(rest, ['--email', '--name', '--data-dir', '--store']);
    const email = requireEmail(flags);
    await withStore(flags, async (store) => {
      const { record, secret } = await store.keys.create(email, flags['--name']);
      process.stdout.write(`${secret}\n`);
      log(`created key ${record.id} "${record.name}" (${record.masked}) for ${record.email}; the secret above is shown only once`);
    });
  } else if (action === 'list') {
    const flags = parseFlags(rest, ['--email', '--data-dir', '--store']);
    const email = requireEmail(flags);
    await withStore(flags, async (store) => {
      const rows = await store.keys.list(email);
      const lines = [['ID', 'NAME', 'KEY', 'CREATED', 'LAST USED', 'REVOKED']];
      for (const k of rows) lines.push([k.id, k.name, k.masked, k.created_at, k.last_used_at ?? '-', k.revoked_at ?? '-']);
      const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
      process.stdout.write(
        lines
          .map((l) =>
            l
              .map((c, i) => c.padEnd(widths[i]!))
              .join('  ')
              .trimEnd(),
          )
          .join('\n') + '\n',
      );
    });
  } else if (action === 'revoke') {
    const id = rest[0];
    if (!id || id.startsWith('--')) throw new UsageError('keys revoke needs a key ID');
    const flags = parseFlags(rest.slice(1), ['--data-dir', '--store']);
    await withStore(flags, async (store) => {
      const revoked = await store.keys.revoke(id, null);
      if (!revoked) throw new StartupError(`no key with id ${id}`);
      process.stdout.write(`revoked ${revoked.id} (${revoked.masked}) of ${revoked.email} at ${revoked.revoked_at}\n`);
    });
  } else {
    throw new UsageError(`unknown keys command ${JSON.stringify(action ?? '')}; use create, list or revoke`);
  }
}

async function calibrateCommand(argv: string[]): Promise<void> {
  const flags = calibrateFlags(argv);
  const { model } = modelFor(flags['--model'] ?? (process.env.ARBITRA_MODEL || undefined));
  if (!fs.existsSync(model)) throw new CalibrateError(`model file ${model} does not exist (arbitra models pull fetches it)`);
  if (flags['--file'] !== undefined && !fs.existsSync(flags['--file'])) throw new CalibrateError(`no such file: ${flags['--file']}`);
  const args = { modelPath: model, file: flags['--file'] ?? null, presetFile: flags['--out'] ?? null, out: (text: string) => process.stdout.write(text) };
  // A preset fitted from a labelled file never touches the data dir.
  const saved =
    args.file !== null && args.presetFile !== null
      ? await calibrate({ ...args, store: null })
      : await withStore(flags, (store) => calibrate({ ...args, store }));
  if (!saved) throw new CalibrateError('not saved: no question type improved on its held-out proper scoring rule');
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help' || rest.includes('--help')) {
      process.stdout.write(helpText());
      return command === undefined ? 2 : 0;
    }
    if (command === 'serve') await serve(rest);
    else if (command === 'engine') await engine(rest);
    else if (command === 'keys') await keys(rest);
    else if (command === 'calibrate') await calibrateCommand(rest);
    else if (command === 'secrets') await secrets(rest);
    else if (command === 'models') await modelsCommand(rest, (text) => process.stdout.write(text), log);
    else throw new UsageError(`unknown command ${JSON.stringify(command)} (see arbitra --help)`);
    return 0;
  } catch (err) {
    if (err instanceof CalibrateError) {
      log(`arbitra: ${err.message}`);
      return 1;
    }
    if (err instanceof UsageError || err instanceof ConfigError || err instanceof ModelsUsageError) {
      log(`arbitra: ${err.message}`);
      return 2;
    }
    if (err instanceof StartupError) {
      log(`arbitra: ${err.message}`);
      return 1;
    }
    log(`arbitra: ${(err as Error).message?.split('\n')[0] ?? String(err)}`);
    return 1;
  }
}

const code = await main(process.argv.slice(2));
// serve and engine keep running on their handles; everything else ends here.
if (code !== 0 || (process.argv[2] !== 'serve' && process.argv[2] !== 'engine')) process.exit(code);

// Where `arbitra serve` gets its engines: local engine processes it forks (one, or one per GPU with
// --gpus), or remote engine nodes it connects to (--engines). The one place that tells the two apart;
// the primary, the workers and placement see a list of engines either way.
import fs from 'node:fs';
import { modelIdOf } from '../api/routes/models.js';
import type { Config } from '../config.js';
import type { EngineClientOptions } from '../engine/client.js';
import type { EngineHost } from '../engine/board.js';
import { arithmeticOf } from '../engine/exact-path.js';
import { startEngineHost } from '../engine/host.js';
import { watchRemoteEngine } from '../engine/remote-host.js';
import type { EngineInfo } from '../engine/types.js';
import { StartupError } from './preflight.js';

export function engineCount(config: Config): number {
  return config.engines?.length ?? config.gpus?.length ?? 1;
}

/** The certificate authority file named by ARBITRA_ENGINE_CA, read once. */
function readCa(config: Config): Buffer | undefined {
  if (!config.engineCa) return undefined;
  try {
    return fs.readFileSync(config.engineCa);
  } catch (err) {
    throw new StartupError(`ARBITRA_ENGINE_CA ${config.engineCa} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

export function engineClientOptions(config: Config): EngineClientOptions {
  return { count: engineCount(config), secret: config.engineSecret, ca: readCa(config) };
}

export interface EngineSet {
  hosts: EngineHost[];
  /** True for engines this node forks: their load is part of start-up. */
  local: boolean;
}

/**
 * Whether a remote engine's facts may serve beside the others: a reason when not. Every engine must
 * serve the node's model (`modelId`), from the very same file and with the same arithmetic (a CPU
 * variant included), since which engine answers depends on the load and the answer may not. The
 * first engine accepted sets file and arithmetic for the node's lifetime, so an engine that changed
 * cannot become the reference by connecting while the others restart.
 */
export function engineAcceptance(modelId: string): (info: EngineInfo) => string | null {
  let pinned: { sha256: string; arithmetic: string } | null = null;
  const accept = (info: EngineInfo): string | null => {
    const served = modelIdOf(info.path);
    if (served !== modelId) return `it serves the model ${served}, this node serves ${modelId}`;
    if (!info.kernelPath) return 'it does not say which kernels and CPU variant it runs (an engine of another version?)';
    const arithmetic = arithmeticOf(info.backend, info.kernelPath);
    pinned ??= { sha256: info.sha256, arithmetic };
    if (info.sha256 !== pinned.sha256)
      return `its ${served} file (sha256 ${info.sha256.slice(0, 12)}…) differs from the other engines' (${pinned.sha256.slice(0, 12)}…)`;
    if (arithmetic !== pinned.arithmetic) {
      return `its arithmetic (${arithmetic}) differs from the other engines' (${pinned.arithmetic}), so an answer would depend on which engine gave it; give every engine the same --kernels, --flash-attention and --cpu-variant (one that every processor runs)`;
    }
    return null;
  };
  // The facts are JSON from another process, perhaps of another version: what cannot be read
  // refuses the engine, never throws in the primary.
  return (info) => {
    try {
      return accept(info);
    } catch (err) {
      return `its facts cannot be read (${(err as Error).message})`;
    }
  };
}

/** Local engines need the model file (`modelPath`); remote ones only the served model's id. */
export function startEngines(config: Config, model: { id: string; path: string | null }, log: (line: string) => void): EngineSet {
  if (!config.engines) {
    const modelPath = model.path!;
    const hosts = (config.gpus ?? [null]).map((device, id) => startEngineHost({ id, device, modelPath, engine: config.engine, log }));
    return { hosts, local: true };
  }
  const ca = readCa(config);
  const accept = engineAcceptance(model.id);
  const hosts = config.engines.map((address, id) =>
    watchRemoteEngine({ id, address, secret: config.engineSecret!, ca, accept, livenessSeconds: config.engine.livenessSeconds, log }),
  );
  return { hosts, local: false };
}

// `arbitra engine --listen HOST:PORT`: a machine that holds the model for API nodes elsewhere
// (`arbitra serve --engines`). One process, one model copy, the same scorer and the same engine
// service as a local engine, on TCP (TLS with --tls-cert/--tls-key), every call proving the shared
// secret. A machine with several GPUs runs one per GPU, each with its own CUDA_VISIBLE_DEVICES and
// port. An engine that wedges exits (code 70) for its service manager to restart it, as the
// primary of `arbitra serve` restarts a local one; its health service says NOT_SERVING meanwhile.
import fs from 'node:fs';
import type { Config } from '../config.js';
import { createModelCatalog } from '../api/routes/models.js';
import { createLocalEngine } from '../engine/local.js';
import { DEFAULT_ENGINE_OPTIONS } from '../engine/llama-engine.js';
import { serveEngine, type TlsFiles } from '../engine/rpc/server.js';
import { watchLiveness } from '../engine/watchdog.js';
import { resolveModel, StartupError } from './preflight.js';
import { engineReport } from '../engine/determinism-check.js';
import { runSelfTest } from './self-test.js';

/** EX_SOFTWARE: the service manager restarts the engine (Restart=on-failure). */
export const WEDGED_EXIT_CODE = 70;

export interface EngineNode {
  address: string;
  stop(): Promise<void>;
}

function readTls(config: Config): TlsFiles | undefined {
  if (!config.engineTls) return undefined;
  const read = (file: string, what: string): Buffer => {
    try {
      return fs.readFileSync(file);
    } catch (err) {
      throw new StartupError(`the TLS ${what} ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  };
  return { cert: read(config.engineTls.cert, 'certificate'), key: read(config.engineTls.key, 'key') };
}

export async function runEngineNode(config: Config, log: (line: string) => void): Promise<EngineNode> {
  if (!config.listen) throw new StartupError('arbitra engine needs --listen HOST:PORT (or ARBITRA_ENGINE_LISTEN)');
  const tls = readTls(config);
  const modelPath = await resolveModel(config, log);
  const modelId = createModelCatalog(modelPath, config.modelAliases).id;
  const local = await createLocalEngine(modelPath, config.engine);
  let server;
  try {
    server = await serveEngine(local, { ...config.listen, secret: config.engineSecret!, tls }, log);
  } catch (err) {
    await local.close();
    const code = (err as NodeJS.ErrnoException).code;
    throw new StartupError(
      `cannot listen on ${config.listen.host}:${config.listen.port} (${code === 'EADDRINUSE' ? 'the port is already in use' : (code ?? (err as Error).message)})`,
    );
  }
  const info = await local.info();
  log(`arbitra engine listening on ${server.address} (model ${modelId}, backend ${info.backend}, ${tls ? 'TLS' : 'no TLS: keep it on a private network'})`);
  engineReport(info).forEach((line) => log(line));
  if (config.selfTest) runSelfTest(local, info, modelId, log);
  const watchdog = watchLiveness({
    stats: async () => local.stats(),
    floorMs: (config.engine.livenessSeconds ?? DEFAULT_ENGINE_OPTIONS.livenessSeconds) * 1000,
    onWedged: (why) => {
      log(`arbitra engine is wedged: ${why}; exiting for the service manager to restart it`);
      process.exit(WEDGED_EXIT_CODE);
    },
  });
  return {
    address: server.address,
    async stop() {
      watchdog.stop();
      await server.close();
      await local.close();
    },
  };
}

// `arbitra engine --listen HOST:PORT`: a machine that holds the model for API nodes elsewhere
// (`arbitra serve --engines`). One process, one model copy, the same scorer as a local engine; its
// socket is TCP (TLS with --tls-cert/--tls-key) behind the shared-secret handshake. A machine with
// several GPUs runs one per GPU, each with its own CUDA_VISIBLE_DEVICES and port.
import fs from 'node:fs';
import type { Config } from '../config.js';
import { createModelCatalog } from '../api/routes/models.js';
import { createLocalEngine } from '../engine/local.js';
import { serveEngineTcp, type TlsFiles } from '../engine/tcp.js';
import { resolveModel, StartupError } from './preflight.js';
import { runSelfTest } from './self-test.js';

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
    server = await serveEngineTcp(
      { scoreText: (request, signal) => local.scoreText(request, signal), info: () => local.info(), stats: () => local.stats() },
      { ...config.listen, secret: config.engineSecret!, tls },
      log,
    );
  } catch (err) {
    await local.close();
    const code = (err as NodeJS.ErrnoException).code;
    throw new StartupError(`cannot listen on ${config.listen.host}:${config.listen.port} (${code === 'EADDRINUSE' ? 'the port is already in use' : (code ?? (err as Error).message)})`);
  }
  const info = await local.info();
  log(`arbitra engine listening on ${server.address} (model ${modelId}, backend ${info.backend}, ${tls ? 'TLS' : 'no TLS: keep it on a private network'})`);
  if (config.selfTest) runSelfTest(local, info, modelId, log);
  return {
    address: server.address,
    async stop() {
      await server.close();
      await local.close();
    },
  };
}

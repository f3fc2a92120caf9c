// The worker → engine hop alone: the engine service on a private Unix socket with a fake engine
// behind it that answers at once, called one request at a time from this process, as an HTTP
// worker calls the engine process. What is left is the transport (serialising, the socket, the
// call's bookkeeping both ends), the part of a decision's time the choice of RPC decides.
import { performance } from 'node:perf_hooks';
import { openEngineChannel } from '../../src/engine/rpc/client.js';
import { serveEngine } from '../../src/engine/rpc/server.js';
import { privateSocketPath, removeEngineSocket } from '../../src/engine/rpc/socket-dir.js';
import type { EngineInfo, EngineStats, TextScoreRequest, TextScoreResult } from '../../src/engine/types.js';

/** A result of the request's shape: one log-prob per answer of every branch. */
export function resultFor(request: TextScoreRequest): TextScoreResult {
  return {
    branches: request.branches.map((b) => b.answers.map((_, i) => -0.1 - i)),
    promptTokens: 300,
    prefixTokens: 280,
    evaluatedTokens: 20,
    cachedTokens: 280,
  };
}

/** Milliseconds of each of `calls` round trips (after `warm` unmeasured ones). */
export async function engineRoundTrips(request: TextScoreRequest, calls: number, warm = 50): Promise<number[]> {
  const result = resultFor(request);
  const socket = await privateSocketPath();
  const server = await serveEngine(
    { info: async () => ({}) as EngineInfo, stats: () => ({}) as EngineStats, scoreText: async () => result },
    { path: socket },
    () => {},
  );
  const channel = openEngineChannel(server.address);
  try {
    const times: number[] = [];
    for (let i = 0; i < warm + calls; i++) {
      const t0 = performance.now();
      await channel.score(request);
      if (i >= warm) times.push(performance.now() - t0);
    }
    return times;
  } finally {
    channel.close();
    await server.close();
    removeEngineSocket(socket);
  }
}

// Picks the transport: uWebSockets.js when its native build loads, node:http otherwise
// (or when --http node asks for it). Both serve the same HttpApp.
import { startNodeServer } from './node-server.js';
import { loadUws, startUwsServer } from './uws-server.js';
import type { HttpImplementation } from '../api/route.js';
import type { HttpApp, RunningServer } from './types.js';

export interface StartHttpServerOptions {
  host: string;
  port: number;
  handler: HttpApp;
  /** Preferred transport (--http); defaults to 'uws'. */
  prefer?: HttpImplementation;
  /** Told why uWS was not used when it was preferred but could not load. */
  log?: (line: string) => void;
}

/** The transport a start would use, without starting it. */
export function chooseImplementation(prefer?: HttpImplementation, log?: (line: string) => void): HttpImplementation {
  if (prefer === 'node') return 'node';
  try {
    loadUws();
    return 'uws';
  } catch (err) {
    log?.(`uWebSockets.js unavailable, using node:http: ${(err as Error).message.split('\n')[0]}`);
    return 'node';
  }
}

export function startHttpServer(opts: StartHttpServerOptions): Promise<RunningServer> {
  const impl = chooseImplementation(opts.prefer, opts.log);
  return impl === 'uws' ? startUwsServer(opts.handler, opts.host, opts.port) : startNodeServer(opts.handler, opts.host, opts.port);
}

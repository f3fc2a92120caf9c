// Messages between the primary and its HTTP workers on the cluster IPC channel (the engine and
// metrics channels have their own `ch`).
import type { HttpImplementation } from '../api/route.js';

export const CLUSTER_CH = 'cluster';
/** The port the primary proved free (and chose, for port 0); every worker listens on it. */
export const CLUSTER_PORT_ENV = 'ARBITRA_CLUSTER_PORT';

export type ClusterMessage =
  | { ch: typeof CLUSTER_CH; type: 'listening'; http: HttpImplementation; port: number }
  | { ch: typeof CLUSTER_CH; type: 'fatal'; message: string }
  | { ch: typeof CLUSTER_CH; type: 'shutdown' };

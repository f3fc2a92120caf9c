// A real server on 127.0.0.1 (port 0) over a real store (an LMDB dir or a PostgreSQL database),
// serving the routes of this area.
import { createHttpApp } from '../../src/http/pipeline.js';
import { startHttpServer } from '../../src/http/server.js';
import type { Route } from '../../src/api/route.js';
import { loadLimitsConfig, type LimitsConfig } from '../../src/limits/config.js';
import { openStore, type Store, type StoreOptions } from '../../src/store/index.js';
import { consoleRoutes } from '../../src/console/routes.js';
import { waitlistRoutes } from '../../src/api/routes/waitlist.js';
import { tracesRoutes } from '../../src/api/routes/traces.js';
import { retentionRoutes } from '../../src/api/routes/retention.js';
import { createSecretThrottle, type SecretThrottle } from '../../src/api/secret-throttle.js';

export const TOKEN = 'console-secret-for-tests';

export interface Harness {
  store: Store;
  limits: LimitsConfig;
  secretThrottle: SecretThrottle;
  url: string;
  call(method: string, path: string, opts?: { headers?: Record<string, string>; body?: unknown }): Promise<{ status: number; headers: Headers; json: any }>;
  console(email: string): Record<string, string>;
  close(): Promise<void>;
}

export async function startHarness(
  location: string,
  env: Record<string, string> = {},
  consoleToken: string | null = TOKEN,
  storeOptions: StoreOptions = {},
): Promise<Harness> {
  const store = await openStore(location, storeOptions);
  const limits = loadLimitsConfig(env);
  const secretThrottle = createSecretThrottle(store, limits);
  const routes: Route[] = [
    ...consoleRoutes({ store, limits, consoleToken: consoleToken ?? undefined, secretThrottle }),
    ...waitlistRoutes({ store, limits }),
    ...tracesRoutes({ store, limits, secretThrottle }),
    ...retentionRoutes({ store, secretThrottle }),
  ];
  const server = await startHttpServer({ host: '127.0.0.1', port: 0, handler: createHttpApp({ routes, log: () => {} }), prefer: 'node' });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    store,
    limits,
    secretThrottle,
    url,
    async call(method, path, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      let body: string | undefined;
      if (opts.body !== undefined) {
        body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(url + path, { method, headers, body });
      const text = await res.text();
      return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : null };
    },
    console: (email) => ({ 'x-arbitra-console-token': TOKEN, 'x-arbitra-user-email': email }),
    async close() {
      await server.close();
      await store.close();
    },
  };
}

export { fakeRequest } from '../helpers/request.js';

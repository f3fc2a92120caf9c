// Every store call timed, whatever the backend: the wrapper reports how long each operation took
// (until its promise settled), so an operator sees the database's share of a request's time and a
// bench can measure it. Only what returns a promise is timed; iterators and plain values pass through.
import type { Store } from './types.js';

const MODULES = ['users', 'keys', 'idempotency', 'retention', 'counters', 'waitlist', 'traces', 'verificationTokens', 'calibrations'] as const;

/** `observe` gets "module.method" and the seconds the call took, failed calls included. */
export function timedStore(store: Store, observe: (operation: string, seconds: number) => void): Store {
  const timed = Object.create(store) as Store;
  for (const name of MODULES) {
    const module = store[name] as unknown as Record<string, unknown>;
    const wrapped = Object.create(module) as Record<string, unknown>;
    for (const key of methodNames(module)) {
      const fn = module[key] as (...args: unknown[]) => unknown;
      const operation = `${name}.${key}`;
      wrapped[key] = (...args: unknown[]) => {
        const start = process.hrtime.bigint();
        const out = fn.apply(module, args);
        if (!(out instanceof Promise)) return out;
        const done = (): void => observe(operation, Number(process.hrtime.bigint() - start) / 1e9);
        out.then(done, done);
        return out;
      };
    }
    Object.defineProperty(timed, name, { value: wrapped, enumerable: true });
  }
  return timed;
}

/** Own and prototype methods: some modules are object literals, some class instances. */
function methodNames(module: Record<string, unknown>): string[] {
  const names = new Set<string>();
  for (let o: object | null = module; o && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const key of Object.getOwnPropertyNames(o)) if (key !== 'constructor' && typeof module[key] === 'function') names.add(key);
  }
  return [...names];
}

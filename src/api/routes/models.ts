// GET /v1/models and the model catalogue behind it: one served model (the engine's) under its own
// id and its aliases. The third party's clients send "jev-latest" by default, so that name and its
// siblings always resolve to the served model.
import path from 'node:path';
import { ApiError } from '../errors.js';
import { authenticate } from '../auth.js';
import type { SecretThrottle } from '../secret-throttle.js';
import { ModelsListResponse, type ModelInfo } from '../schemas/models.js';
import { promptCapacity, type EngineService } from '../../engine/types.js';
import type { Route } from '../route.js';
import type { KeyStore } from '../../store/types.js';
import { modelNameOf } from '../../models/ref.js';

export const BUILTIN_ALIASES = ['jev-latest', 'jev-preview', 'default'] as const;

export interface ModelCatalog {
  /** Id of the served model, from its file name (e.g. gemma-3-270m-q4_k_m). */
  readonly id: string;
  /** The id first, then every alias. */
  readonly names: readonly string[];
  /** The served id for a requested name; absent or null → the default; unknown → null. */
  resolve(name: string | null | undefined): string | null;
  /** 404 `not_found` naming the served models, for a `model` nobody serves. */
  unknown(name: string): ApiError;
}

/**
 * @param modelPath the GGUF file the engine loads
 * @param extraAliases alias → target, where the target is "default", the id, or another alias
 */
/** The id a model file is served under: its file name, lower case, without ".gguf" (or a split model's part suffix). */
export function modelIdOf(modelPath: string): string {
  return modelNameOf(path.basename(modelPath));
}

export function createModelCatalog(modelPath: string, extraAliases: Record<string, string> = {}): ModelCatalog {
  const id = modelIdOf(modelPath);
  const aliases = new Map<string, string>(BUILTIN_ALIASES.map((a) => [a, id]));
  for (const [alias, target] of Object.entries(extraAliases)) {
    if (target !== id && !aliases.has(target)) {
      throw new Error(`model alias ${alias}=${target}: ${target} is not served (served: ${[id, ...aliases.keys()].join(', ')})`);
    }
    aliases.set(alias, id);
  }
  const names = [id, ...[...aliases.keys()].filter((a) => a !== id)];
  return {
    id,
    names,
    resolve(name) {
      if (name === undefined || name === null) return id;
      return name === id || aliases.has(name) ? id : null;
    },
    unknown(name) {
      return new ApiError('not_found', `The model ${JSON.stringify(name)} is not served here; use one of: ${names.join(', ')}.`, {
        model: name,
        available_models: names,
      });
    },
  };
}

export interface ModelsRouteDeps {
  models: ModelCatalog;
  engine: EngineService;
  store: { keys: KeyStore };
  secretThrottle: SecretThrottle;
}

export function modelsRoutes(deps: ModelsRouteDeps): Route[] {
  return [
    {
      method: 'GET',
      path: '/v1/models',
      summary: 'List the served model and its aliases',
      auth: 'api_key',
      // 503 while the engine loads or restarts.
      errorStatuses: [503],
      schemas: { response: ModelsListResponse },
      async handler(req) {
        await authenticate(req, deps.store.keys, deps.secretThrottle);
        const info = await deps.engine.info();
        const base = `${info.description || info.architecture}, ${info.quantMethod}, ${info.backend}`;
        const data: ModelInfo[] = deps.models.names.map((name) => ({
          id: name,
          object: 'model',
          owned_by: 'arbitra',
          max_context_tokens: promptCapacity(info),
          description: name === deps.models.id ? base : `alias of ${deps.models.id} (${base})`,
          name,
          release_date: info.fileModified.slice(0, 10),
        }));
        const body: ModelsListResponse = { object: 'list', data, models: data };
        return { status: 200, body };
      },
    },
  ];
}

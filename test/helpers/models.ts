// The model files the suite runs on. `npm test` pulls the small ones from the catalogue before tap
// starts; `npm install` fetched the default one.
import path from 'node:path';
import { packageRoot } from '../../src/paths.js';

// From the package root, not this file, so the helpers work compiled too (bench/nodes.ts runs from dist/).
const models = path.join(packageRoot(), 'models');

/** Gemma 3 270M base: small and fast, no chat template (the plain layout). Tests of invariants use it. */
export const TEST_MODEL = path.join(models, 'gemma-3-270m-q4_k_m.gguf');
export const TEST_MODEL_ID = 'gemma-3-270m-q4_k_m';
/** SmolLM2 135M Instruct: the smallest model with a chat template. */
export const CHAT_MODEL = path.join(models, 'smollm2-135m-instruct-q4_1.gguf');
/** The default model: what tests of answer quality use. */
export const DEFAULT_MODEL_FILE = path.join(models, 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf');

/**
 * `serve` flags for a small KV pool (8 sequences, room for a 4,096-token prompt: 6,144 cells), for
 * servers whose KV cache is not what is tested: the default pool is 34,816 cells, 0.6 GiB on the
 * test model (0.93 GiB on the default one), written once at every engine start.
 */
export const SMALL_LANES = ['--max-sequences', '8', '--long-ctx-size', '0'];

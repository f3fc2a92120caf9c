// `node --import ./scripts/ts-loader.mjs file.ts`: runs TypeScript from dist/ (see ts-hooks.mjs).
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);

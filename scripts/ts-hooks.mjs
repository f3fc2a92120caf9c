// Module hooks that run the repository's TypeScript from what `tsc` already emitted into dist/.
// tap's own TypeScript plugin starts ts-node in every test process and transpiles every file it
// imports again: about 1.5 s a file, two minutes of a full run. Here a .ts module keeps its own URL
// (so import.meta.url and fixture paths are unchanged) and its source is dist's JavaScript; only a
// file edited since the last build is transpiled, so the edit-test loop never runs stale code.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const dist = path.join(root, 'dist');
/** The compiler and the repository's options, loaded only when a file must be transpiled. */
let compiler;

/** NodeNext imports name the emitted `.js`; in the source tree that file is the `.ts` beside it. */
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (error) {
    const fromTs = context.parentURL?.endsWith('.ts') && specifier.startsWith('.') && specifier.endsWith('.js');
    if (!fromTs || error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    return next(specifier.slice(0, -3) + '.ts', context);
  }
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const file = fileURLToPath(url);
  const source = emitted(file) ?? (await transpiled(file));
  return { format: 'module', source, shortCircuit: true };
}

/** dist's JavaScript for this file when it is at least as new as the source, its source map made absolute. */
function emitted(file) {
  const relative = path.relative(root, file);
  if (relative.startsWith('..')) return undefined;
  const js = path.join(dist, relative.replace(/\.ts$/, '.js'));
  if (!existsSync(js) || statSync(js).mtimeMs < statSync(file).mtimeMs) return undefined;
  const map = pathToFileURL(js + '.map').href;
  return readFileSync(js, 'utf8').replace(/\/\/# sourceMappingURL=\S+\s*$/, `//# sourceMappingURL=${map}\n`);
}

async function loadCompiler() {
  const typescript = (await import('typescript')).default;
  const config = typescript.readConfigFile(path.join(root, 'tsconfig.json'), typescript.sys.readFile).config;
  const { options } = typescript.convertCompilerOptionsFromJson(config.compilerOptions, root);
  // package.json says "type": "module"; transpileModule cannot see that, so ESM is named.
  return { typescript, options: { ...options, module: typescript.ModuleKind.ESNext, sourceMap: false, inlineSourceMap: true, inlineSources: true } };
}

async function transpiled(file) {
  compiler ??= await loadCompiler();
  return compiler.typescript.transpileModule(readFileSync(file, 'utf8'), { fileName: file, compilerOptions: compiler.options }).outputText;
}

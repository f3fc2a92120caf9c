// Lint for the TypeScript of src, bench, test and web, with typescript-eslint's type-aware rules:
// the mistakes a type checker alone lets through (a promise nobody awaits, an `any` leaking into
// typed code, a value stringified as [object Object]). Formatting is Prettier's job, not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'build-cuda/**', 'deps/**', 'node_modules/**', '.tap/**', 'bench/out/**', '**/*.js', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        project: ['./tsconfig.test.json', './tsconfig.web.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // An async function that implements a Promise-returning interface without awaiting (the LMDB
      // stores, which are synchronous underneath) is right as it is: a throw becomes a rejection,
      // as the interface's callers expect.
      '@typescript-eslint/require-await': 'off',
      // The JSON scanner throws a plain Fault out of any depth of its recursion: no stack to capture
      // for a body that failed to parse.
      '@typescript-eslint/only-throw-error': ['error', { allow: [{ from: 'file', name: 'Fault', path: 'src/api/json-syntax-error.ts' }] }],
      // A leading underscore names what is taken apart only to be left out.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // Tests and benches read the server's replies as the untyped JSON they are, to check them.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // tap's own idioms are safe: `t.test(...)` is awaited by tap itself.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [{ from: 'package', package: 'tap', name: ['test', 'skip', 'todo', 'only'] }] }],
    },
  },
);

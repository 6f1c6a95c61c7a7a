// Lint: typescript-eslint's recommended rules plus a few house rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// A statement's keywords as payd writes them (upper case).
const SQL = String.raw`/\b(SELECT|INSERT INTO|DELETE FROM|ON CONFLICT)\b|\bUPDATE [a-z_]+ SET\b/`;

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'sdk/dist/', '.payd/', 'test-results/', 'coverage/', 'public/build/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', AbortSignal: 'readonly', crypto: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', fetch: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': ['error', { allow: ['warn', 'error'] }],
    },
  },
  {
    // CommonJS configuration files (.dependency-cruiser.cjs).
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', __dirname: 'readonly' } },
  },
  {
    // Tests read JSON responses whose shape they assert field by field.
    files: ['test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['src/main.ts', 'bench/**', 'scripts/**', 'bin/**', 'examples/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // No request-scoped async context in the server: on Node 20, AsyncLocalStorage turns on
    // promise hooks for every promise of the process (about a tenth of a request's CPU).
    // Tracing's context manager (otel-sdk.ts) is loaded only when tracing is on.
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    ignores: ['src/platform/observability/otel-sdk.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [
        { name: 'node:async_hooks', message: 'no AsyncLocalStorage or async hooks in the server: pass what the work needs as arguments (eslint.config.js)' },
        { name: 'async_hooks', message: 'no AsyncLocalStorage or async hooks in the server: pass what the work needs as arguments (eslint.config.js)' },
      ] }],
    },
  },
  {
    // Layering (docs/architecture.md, Layers; the import rules are .dependency-cruiser.cjs):
    // SQL only in *.repo.ts files and the database adapters (src/platform/db/).
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    ignores: ['src/**/*.repo.ts', 'src/platform/db/**'],
    rules: {
      'no-restricted-syntax': ['error',
        { selector: `Literal[value=${SQL}]`, message: 'SQL belongs in a *.repo.ts file (or the db adapters): move the statement to the repository' },
        { selector: `TemplateElement[value.raw=${SQL}]`, message: 'SQL belongs in a *.repo.ts file (or the db adapters): move the statement to the repository' },
      ],
    },
  },
);

// ESLint: the recommended rules of ESLint and typescript-eslint, and the few rules of this code
// base that a linter can check. `npm run -s lint` runs it with the layering and formatter checks.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.cache/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      eqeqeq: ['error', 'always'],
      // A variable read by a closure before its one assignment (a forward reference) stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `const { omitted, ...rest } = value` drops a property: `omitted` is meant to go unused.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true, argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  {
    files: ['src/lab/page/**'],
    languageOptions: { globals: globals.browser },
  },
  {
    // The engine reads time and chance only through its Clock and Random ports, so that the test
    // driver runs it on virtual time from a seed.
    files: ['src/engine/**'],
    rules: {
      'no-restricted-globals': [
        'error',
        ...['setTimeout', 'setInterval', 'setImmediate', 'clearTimeout', 'clearInterval', 'performance'].map((name) => ({
          name,
          message: 'the engine waits only through its Clock port (virtual time in the test driver)',
        })),
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'the engine reads time only through its Clock port' },
        { object: 'Math', property: 'random', message: 'the engine draws only from its Random port (seeded in the test driver)' },
      ],
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Date']", message: 'the engine reads time only through its Clock port' }],
    },
  },
);

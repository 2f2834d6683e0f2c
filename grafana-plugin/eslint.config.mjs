// ESLint for the plugin frontend: Grafana's shared config (@grafana/eslint-config),
// with the additions Grafana's plugin scaffold (@grafana/create-plugin) makes.
import grafanaConfig from '@grafana/eslint-config';

export default [
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
  ...grafanaConfig,
  {
    // TypeScript props types check what react/prop-types would.
    rules: { 'react/prop-types': 'off' },
  },
  {
    // Type-aware: flags Grafana APIs marked @deprecated, which later Grafana versions drop.
    files: ['src/**/*.{ts,tsx}'],
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    rules: { '@typescript-eslint/no-deprecated': 'warn' },
  },
];

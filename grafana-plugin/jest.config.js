// Jest for the plugin frontend, set up the way Grafana's plugin scaffold
// (@grafana/create-plugin's .config/jest.config.js) does: SWC compiles
// TypeScript, the DOM is jsdom, and the ES-module-only packages that
// @grafana/* pull in are compiled too instead of being skipped.
process.env.TZ = 'UTC';

// Packages under node_modules that ship only ES modules.
const esModules = [
  '@grafana/schema',
  '@react-hookz/web',
  '@ver0/deep-equal',
  '@wojtekmaj/date-utils',
  'd3',
  'd3-color',
  'd3-force',
  'd3-interpolate',
  'd3-scale-chromatic',
  'get-user-locale',
  'marked',
  'memoize',
  'mimic-function',
  'ol',
  'react-calendar',
  'react-colorful',
  'rxjs',
  'uuid',
];

/** @type {import('jest').Config} */
module.exports = {
  // A test types into and clicks through an editor; on a loaded 2-core CI
  // machine one such test took over jest's default 5 s, and a timed-out
  // test's pending clicks then land in the next test's editor. Time is not
  // what these tests check.
  testTimeout: 120000,
  testEnvironment: 'jest-environment-jsdom',
  testMatch: ['<rootDir>/src/**/*.test.{ts,tsx}'],
  setupFilesAfterEnv: ['<rootDir>/jest/setup.js'],
  moduleNameMapper: {
    '\\.(css|scss|sass)$': 'identity-obj-proxy',
    // Icons load their SVG over HTTP in Grafana; an empty <svg> is enough here.
    'react-inlinesvg': '<rootDir>/jest/react-inlinesvg.js',
  },
  transform: {
    '^.+\\.(tsx?|jsx?|mjs)$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript', tsx: true }, transform: { react: { runtime: 'classic' } } } },
    ],
  },
  transformIgnorePatterns: [`node_modules/(?!.*(${esModules.join('|')})/.*)`],
};

// Builds src/ into dist/module.js as an AMD module, the format Grafana's
// plugin loader reads, with Grafana's own packages and React left external
// (Grafana provides them at run time), and copies plugin.json and the logo.
const path = require('path');
const CopyWebpackPlugin = require('copy-webpack-plugin');

module.exports = (_env, argv) => ({
  mode: argv.mode || 'production',
  context: __dirname,
  entry: { module: './src/module.ts' },
  devtool: argv.mode === 'development' ? 'eval-source-map' : 'source-map',
  output: {
    path: path.resolve(__dirname, 'dist'),
    filename: '[name].js',
    library: { type: 'amd' },
    publicPath: '/public/plugins/trainscope-trainscope-datasource/',
    clean: { keep: /^gpx_/ }, // the Go backend lands here too
  },
  externals: [
    'react',
    'react-dom',
    '@grafana/data',
    '@grafana/runtime',
    '@grafana/ui',
    '@grafana/i18n',
    '@grafana/schema',
    'rxjs',
    'rxjs/operators',
    'lodash',
    '@emotion/css',
    '@emotion/react',
  ],
  resolve: { extensions: ['.ts', '.tsx', '.js'] },
  module: {
    rules: [{ test: /\.tsx?$/, loader: 'ts-loader', exclude: /node_modules/ }],
  },
  plugins: [
    new CopyWebpackPlugin({
      patterns: [
        {
          from: 'src/plugin.json',
          to: '.',
          transform: (content) =>
            content
              .toString()
              .replace('%VERSION%', require('./package.json').version)
              .replace('%TODAY%', new Date().toISOString().slice(0, 10)),
        },
        { from: 'src/img', to: 'img' },
        { from: 'README.md', to: '.' },
      ],
    }),
  ],
  performance: { hints: false },
});

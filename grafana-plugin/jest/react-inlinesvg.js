// Stands in for react-inlinesvg, which @grafana/ui's Icon uses to fetch SVG
// files from Grafana's server: jsdom has no such server.
const React = require('react');

const InlineSVG = ({ src: _src, innerRef, cacheRequests: _c, preProcessor: _p, ...rest }) =>
  React.createElement('svg', { ref: innerRef, ...rest });

module.exports = InlineSVG;
module.exports.default = InlineSVG;

// Package report is the model of a trainscope report and its text
// renderings: the runs analysed, the verdict (each run's headline, the
// lines under it, whether its ranks are balanced and what limits it), the
// root causes ranked by cost, the findings and metric tables, the
// recommendations and the charts' data, written as JSON (WriteJSON) and as
// markdown (WriteMarkdown, WriteMarkdownFull).
//
// It decides nothing and reads no store: package causes judges the
// verdict and the causes, package detectors loads the rest and builds a
// Report, and the renderers (these, report/html) print what it holds.
package report

// Package html renders a report as one self-contained HTML page: the
// markdown report converted (goldmark) and styled, with a table of
// contents, findings coloured by severity, and after the verdict each
// run's charts drawn as inline SVG (rank time, one step's timeline with the
// late arrivals, top kernels, roofline). It renders what the report holds
// and decides nothing: the charts' data is the report's (Report.Charts), and
// it never reads the store.
package html

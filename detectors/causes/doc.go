// Package causes judges why a run's steps take as long as they do. From
// an Input (the runs, their findings and metric tables, the detectors'
// roles, each run's analysed steps, the late arrivals at collectives and
// who waited for them, the step-time account and the causes config's
// thresholds) Judge finds the root causes of lost step time, costs each
// per step, links the findings they show or explain, and decides each
// run's verdict: its headline, the lines under it, whether its ranks are
// balanced and what limits it.
//
// It is pure: it reads no store and keeps no state between calls. Package
// detectors loads the Input; package report holds what Judge decides and
// renders it.
package causes

// Package testkit is the test support the detector packages share: a
// builder of small Kineto traces whose numbers can be checked by hand, the
// two-rank hand run, and helpers that load folders into an in-memory store
// and run the built-in detectors over them. Only tests import it (the
// import rules in the root package's arch_test.go hold it to that), which
// is why it may use the readers that the detector packages may not.
package testkit

package main

import (
	"strings"
	"testing"
)

// The examples in sql's help use the Flight SQL port serve listens on by
// default.
func TestSQLHelpPort(t *testing.T) {
	code, out, _ := trainscope(t, "sql", "--help")
	_, port, _ := strings.Cut(defaultServe.Flight, ":")
	if code != 0 || !strings.Contains(out, "--server localhost:"+port) || strings.Contains(out, "50051") {
		t.Errorf("sql --help (exit %d) should show --server localhost:%s:\n%s", code, port, out)
	}
}

package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// dashboards are the files dashgen writes, by name.
var dashboards = []struct {
	file  string
	build func() *dashboard.DashboardBuilder
}{
	{"fleet-overview.json", fleetDashboard},
	{"run-drilldown.json", runDashboard},
	{"findings.json", findingsDashboard},
}

func main() {
	out := flag.String("out", "deploy/grafana/dashboards", "folder to write the dashboard JSON files to")
	flag.Parse()
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "dashgen:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	files, err := generate()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range dashboards {
		if err := os.WriteFile(filepath.Join(dir, d.file), files[d.file], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// generate renders every dashboard, by file name.
func generate() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, d := range dashboards {
		built, err := d.build().Build()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.file, err)
		}
		if files[d.file], err = render(built); err != nil {
			return nil, fmt.Errorf("%s: %w", d.file, err)
		}
	}
	return files, nil
}

package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trainscope/trainscope/ingest/script"
)

// IsScript says whether a path names a launch script (*.sh), which is read
// for the config audit and never executed.
func IsScript(path string) bool {
	return strings.HasSuffix(strings.ToLower(path), ".sh")
}

// ReadScript parses a launch script. A script of which nothing could be
// parsed is an InputError; one with problems (a sourced file missing, an
// unterminated quote) is returned with them in its context.
func ReadScript(path string) (*script.Script, error) {
	sc, err := script.ParseFile(path, script.Options{SearchRoot: ModelSearchRoot(path)})
	if err != nil && (sc == nil || len(sc.Flags) == 0) {
		return nil, &InputError{fmt.Errorf("%s: %w", path, err)}
	}
	return sc, nil
}

// ScriptBatches turns a parsed script into its script_flags and
// script_context batches. The caller releases them.
func ScriptBatches(sc *script.Script, runID string) []Batch {
	flags, ctx := sc.Records(runID)
	return []Batch{{"script_flags", flags}, {"script_context", ctx}}
}

// ModelSearchRoot is the nearest folder at or above the script's that has
// a models/ subfolder: model configs sourced through a variable set by an
// entrypoint that is not at hand (${MODEL_CONFIG_DIR}/x.sh) are looked up
// there.
func ModelSearchRoot(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	d := filepath.Dir(abs)
	for range 5 {
		if st, err := os.Stat(filepath.Join(d, "models")); err == nil && st.IsDir() {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
	}
	return ""
}

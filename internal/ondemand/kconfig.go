package ondemand

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// libkineto's on-demand config keys (libkineto/src/Config.cpp). The text
// is KEY=VALUE lines; '#' starts a comment and a line must split on '='
// into exactly two trimmed parts, so a value can hold none of '#', '=' or
// a line break.
const (
	keyLogFile         = "ACTIVITIES_LOG_FILE"
	keyIterations      = "ACTIVITIES_ITERATIONS"
	keyDurationMsecs   = "ACTIVITIES_DURATION_MSECS"
	keyStartIteration  = "PROFILE_START_ITERATION"
	keyStartRoundUp    = "PROFILE_START_ITERATION_ROUNDUP"
	keyStartTime       = "PROFILE_START_TIME"
	keyMaxGPUBufferMB  = "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB"
	keyInputShapes     = "PROFILE_REPORT_INPUT_SHAPES"
	keyProfileMemory   = "PROFILE_PROFILE_MEMORY"
	keyWithStack       = "PROFILE_WITH_STACK"
	keyWithFlops       = "PROFILE_WITH_FLOPS"
	keyWithModules     = "PROFILE_WITH_MODULES"
	keyRequestTraceID  = "REQUEST_TRACE_ID"
	defaultOnDemandDir = "/tmp/" // libkineto's allowed on-demand trace dir unless KINETO_ONDEMAND_TRACE_DIR
)

// Toggles are the profiler's optional recordings, as `dyno gputrace`
// offers them. Each makes the trace larger.
type Toggles struct {
	Shapes  bool `json:"shapes,omitempty"`  // PROFILE_REPORT_INPUT_SHAPES
	Stacks  bool `json:"stacks,omitempty"`  // PROFILE_WITH_STACK
	Memory  bool `json:"memory,omitempty"`  // PROFILE_PROFILE_MEMORY
	Flops   bool `json:"flops,omitempty"`   // PROFILE_WITH_FLOPS
	Modules bool `json:"modules,omitempty"` // PROFILE_WITH_MODULES
}

// kinetoConfig is the config text one process is handed: iteration-based
// when steps > 0 (start on the next step that is a multiple of roundUp, the
// same step on every rank, and record steps of them), else duration-based
// (from startAt when set, else when libkineto is ready).
func kinetoConfig(logFile, traceID string, steps, roundUp int, dur time.Duration, startAt time.Time, bufMB int, t Toggles) string {
	var b strings.Builder
	line := func(k, v string) { b.WriteString(k + "=" + v + "\n") }
	line(keyLogFile, logFile)
	if steps > 0 {
		if roundUp < 1 {
			roundUp = 1
		}
		line(keyStartIteration, "0")
		line(keyStartRoundUp, strconv.Itoa(roundUp))
		line(keyIterations, strconv.Itoa(steps))
	} else {
		if !startAt.IsZero() {
			line(keyStartTime, strconv.FormatInt(startAt.UnixMilli(), 10))
		}
		line(keyDurationMsecs, strconv.FormatInt(dur.Milliseconds(), 10))
	}
	if bufMB > 0 {
		line(keyMaxGPUBufferMB, strconv.Itoa(bufMB))
	}
	line(keyInputShapes, strconv.FormatBool(t.Shapes))
	line(keyProfileMemory, strconv.FormatBool(t.Memory))
	line(keyWithStack, strconv.FormatBool(t.Stacks))
	line(keyWithFlops, strconv.FormatBool(t.Flops))
	line(keyWithModules, strconv.FormatBool(t.Modules))
	if traceID != "" {
		line(keyRequestTraceID, traceID)
	}
	return b.String()
}

// ParseKinetoConfig reads config text as libkineto does: one KEY=VALUE a
// line, '#' to the end of a line a comment, blank lines skipped, keys and
// values trimmed. A line that does not split into two parts is an error
// (libkineto drops the whole config then).
func ParseKinetoConfig(text string) (map[string]string, error) {
	m := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		kv := strings.Split(line, "=")
		if len(kv) != 2 {
			return nil, fmt.Errorf("config line %d: %q is not KEY=VALUE", i+1, line)
		}
		m[strings.TrimSpace(kv[0])] = strings.TrimSpace(kv[1])
	}
	return m, nil
}

// TracePath is the file libkineto writes for log file logFile in process
// pid (its own pid namespace's number): it inserts _<pid> before the first
// ".pt.trace.json", else before the first ".json" (Config.cpp,
// ACTIVITIES_LOG_FILE); a name with neither is used as is.
func TracePath(logFile string, pid int) string {
	suffix := "_" + strconv.Itoa(pid)
	for _, ext := range []string{".pt.trace.json", ".json"} {
		if i := strings.Index(logFile, ext); i >= 0 {
			return logFile[:i] + suffix + logFile[i:]
		}
	}
	return logFile
}

// DefaultTracePath is where libkineto writes when it ignores the
// on-demand log file (outside its allowed directory, since libkineto's
// 2026-06 change #1426): /tmp/libkineto_activities_<pid>.json.
func DefaultTracePath(pid int) string {
	return "/tmp/libkineto_activities_" + strconv.Itoa(pid) + ".json"
}

// allowedDir is the directory libkineto accepts on-demand log files under
// for a process with that KINETO_ONDEMAND_TRACE_DIR ("" when unset),
// ending in '/'.
func allowedDir(envDir string) string {
	d := envDir
	if d == "" {
		d = defaultOnDemandDir
	}
	if !strings.HasSuffix(d, "/") {
		d += "/"
	}
	return d
}

// libkinetoAccepts says whether libkineto ≥ 2026-06 writes to logFile for
// a process whose KINETO_ONDEMAND_TRACE_DIR is envDir: under the allowed
// directory (a plain prefix test, as libkineto makes it) and free of "..".
func libkinetoAccepts(logFile, envDir string) bool {
	return strings.HasPrefix(logFile, allowedDir(envDir)) && !strings.Contains(logFile, "..")
}

// CheckOutputDir says whether dir can hold on-demand traces: absolute,
// clean, and free of what the config text or libkineto's file naming
// would misread ('#', '=', control characters, whitespace, "..", ".json").
func CheckOutputDir(dir string) error {
	switch {
	case dir == "":
		return fmt.Errorf("no output directory")
	case !filepath.IsAbs(dir):
		return fmt.Errorf("output directory %q is not absolute", dir)
	case len(dir) > 3000:
		return fmt.Errorf("output directory of %d bytes", len(dir))
	case strings.Contains(dir, ".."):
		return fmt.Errorf("output directory %q holds \"..\"", dir)
	case strings.Contains(dir, ".json"):
		return fmt.Errorf("output directory %q holds \".json\", where libkineto would insert the pid", dir)
	}
	for _, c := range dir {
		if c == '#' || c == '=' || c <= ' ' || c == 0x7f {
			return fmt.Errorf("output directory %q holds %q, which a libkineto config line cannot carry", dir, c)
		}
	}
	return nil
}

// fileToken is s with every byte but letters, digits, '-' and '_' made
// '_', at most 64 bytes, for file names.
func fileToken(s string) string {
	if s == "" {
		return "_"
	}
	if len(s) > 64 {
		s = s[:64]
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

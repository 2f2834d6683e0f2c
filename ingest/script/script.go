package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Options say what the parser may assume about the world the script would
// run in. Nothing here makes the parser run anything.
type Options struct {
	// Env holds variables the caller's environment sets (MODEL_CONFIG_DIR,
	// MODE, NNODES ...). Every other variable the script reads without
	// assigning it is unset: ${X:-default} takes its default, a bare $X is
	// unknown.
	Env map[string]string
	// Args are the positional parameters $1, $2 ... the script is run with.
	Args []string
	// SearchRoot is a folder searched (with its models/ subfolder) for a
	// sourced file whose path does not resolve, for instance when
	// ${MODEL_CONFIG_DIR} comes from an entrypoint that is not at hand.
	SearchRoot string

	// readFile replaces os reads in tests and fuzzing.
	readFile func(path string) ([]byte, error)
}

// Taken says whether a flag occurrence is in effect when the script runs
// with the known variable values.
type Taken int8

const (
	TakenUnknown Taken = iota // the branch condition depends on something unknown
	TakenYes                  // unconditional, or the branch runs
	TakenNo                   // the branch does not run, or the line is commented out
)

func (t Taken) String() string {
	switch t {
	case TakenYes:
		return "taken"
	case TakenNo:
		return "not taken"
	}
	return "unknown"
}

// Flag is one flag occurrence: a --flag of a launch command, a Hydra
// override, or a variable assignment (Command "env").
type Flag struct {
	Seq     int    // order of the occurrence in the parse (later wins in argparse)
	File    string // the file the line is in: the script or a sourced file
	Line    int
	Array   string // the bash array the flag came from, if any
	Command string // the launch command it belongs to; "" when none uses it
	Branch  string // condition text; "" when unconditional
	Taken   Taken
	Flag    string // --name, a dotted Hydra key, or a variable name
	Value   string
	Switch  bool   // a boolean --flag without a value (Value is "")
	Raw     string // the text before expansion
	Comment string // the comment attached to the line (# NOTE(...) included)
}

// Source is one source / . command and what it resolved to.
type Source struct {
	File     string // the file holding the command
	Line     int
	Raw      string // the path as written
	Resolved string // the file read; "" when none was found
	How      string // "path", or "search" when found by searching
}

// Problem is a parse problem: the file, the line, and what was expected.
// A script with problems still yields everything that could be parsed.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return p.File + ": " + p.Msg
}

// Script is a parsed launch script.
type Script struct {
	Path     string   // as given
	Files    []string // files read: the script first, then sourced files
	Flags    []Flag
	Commands []Command // launch commands, in order
	Sources  []Source
	Context  Context
	Problems []Problem
}

// Err joins the problems into one error, or returns nil.
func (s *Script) Err() error {
	errs := make([]error, len(s.Problems))
	for i, p := range s.Problems {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// Limits that keep hostile input from costing unbounded time or memory.
const (
	maxFileBytes   = 4 << 20  // a launch script or model config is a few KiB
	maxSourceDepth = 16       // source nesting
	maxValueBytes  = 1 << 20  // one variable's value
	maxArrayElems  = 1 << 16  // one array's elements
	maxFlags       = 1 << 18  // rows per script
	maxSteps       = 1 << 17  // commands evaluated per script
	maxNesting     = 200      // nested compound commands / substitutions
	maxSources     = 256      // files sourced per script, repeats included
	maxWork        = 16 << 20 // bytes produced by expansion and rows per script
	maxPathBytes   = 4096     // a sourced file's path (PATH_MAX)
	maxExpandDepth = 64       // ${X:-${Y:-...}} nesting
)

// ParseFile reads and parses the launch script at path. The error is
// non-nil only when the file cannot be read or is not a shell script; the
// Script is returned in every case, with what could be parsed.
func ParseFile(path string, opt Options) (*Script, error) {
	src, err := opt.read(path)
	if err != nil {
		s := &Script{Path: path}
		p := Problem{File: path, Msg: "read: " + err.Error()}
		s.Problems = append(s.Problems, p)
		s.Context = emptyContext()
		return s, fmt.Errorf("read %s: %w", path, err)
	}
	return Parse(path, src, opt)
}

// Parse parses src as the launch script named name; sourced files are
// looked up relative to name's folder. See ParseFile for the error.
func Parse(name string, src []byte, opt Options) (*Script, error) {
	s := &Script{Path: name, Files: []string{name}}
	if p, ok := notText(name, src); ok {
		s.Problems = append(s.Problems, p)
		s.Context = emptyContext()
		return s, p
	}
	it := newInterp(s, opt)
	it.runFile(name, src)
	it.finish()
	s.Context = extractContext(s)
	if !s.IsLaunchScript() {
		// nothing to audit: say what the file is rather than "no rule fired"
		s.Problems = append(s.Problems, Problem{File: name, Msg: NotLaunchScript + whatItIs(src)})
	}
	return s, nil
}

// NotLaunchScript begins the problem of a file with nothing to audit.
const NotLaunchScript = "not a launch script: no training command (python, torchrun, deepspeed, ray job submit, ...) and no flags"

// IsLaunchScript says whether the script launches something or sets flags:
// whether an audit has anything to judge.
func (s *Script) IsLaunchScript() bool { return len(s.Flags) > 0 || len(s.Commands) > 0 }

// whatItIs names what a file that is not a launch script looks like.
func whatItIs(src []byte) string {
	trimmed := bytes.TrimSpace(src)
	switch {
	case len(trimmed) == 0:
		return "; the file is empty"
	case (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed):
		return "; the file is JSON"
	}
	return ""
}

// notText refuses input that is not a shell script: a NUL byte, or mostly
// control characters, in the first KiB (ELF binaries, archives, pickles).
func notText(name string, src []byte) (Problem, bool) {
	head := src
	if len(head) > 1024 {
		head = head[:1024]
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return Problem{File: name, Line: 1 + bytes.Count(head[:i], []byte("\n")),
			Msg: fmt.Sprintf("binary file (NUL byte at offset %d): expected a shell script", i)}, true
	}
	ctl := 0
	for _, c := range head {
		if c < 0x20 && c != '\n' && c != '\t' && c != '\r' && c != '\f' && c != 0x1b {
			ctl++
		}
	}
	if len(head) >= 16 && ctl*10 > len(head) {
		return Problem{File: name, Line: 1,
			Msg: fmt.Sprintf("binary file (%d control bytes in the first %d): expected a shell script", ctl, len(head))}, true
	}
	return Problem{}, false
}

func (o *Options) read(path string) ([]byte, error) {
	if o.readFile != nil {
		return o.readFile(path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxFileBytes)
	}
	return b, nil
}

func (o *Options) exists(path string) bool {
	if o.readFile != nil {
		_, err := o.readFile(path)
		return err == nil
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// resolveSource finds the file a source command names. known is false
// when the path holds a variable the parser could not expand; then the
// text after the last unexpanded reference is searched for.
func (it *interp) resolveSource(path string, known bool, from string) (string, string) {
	if len(path) > maxPathBytes {
		return "", ""
	}
	dir := filepath.Dir(from)
	if known && path != "" {
		p := path
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if it.opt.exists(p) {
			return p, "path"
		}
	}
	suffix := path
	if !known {
		// "${MODEL_CONFIG_DIR}/qwen3-4B.sh": keep what follows the reference
		if i := strings.LastIndexAny(suffix, "}$"); i >= 0 {
			suffix = suffix[i+1:]
			if j := strings.IndexByte(suffix, '/'); j > 0 && !strings.ContainsAny(suffix[:j], "./") {
				suffix = suffix[j:] // $VAR_rest/x.sh: the name part is unknown
			}
		}
	}
	suffix = strings.TrimLeft(filepath.Clean("/"+suffix), "/")
	if suffix == "" || suffix == "." {
		return "", ""
	}
	var roots []string
	if it.opt.SearchRoot != "" {
		roots = append(roots, it.opt.SearchRoot)
	}
	// the script's folder and a few above it: model configs usually sit
	// in a models/ folder next to or above the launch scripts
	for d, i := dir, 0; i < 5; i++ {
		roots = append(roots, d)
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
	}
	for _, r := range roots {
		for _, c := range []string{filepath.Join(r, suffix), filepath.Join(r, "models", filepath.Base(suffix))} {
			if it.opt.exists(c) {
				return c, "search"
			}
		}
	}
	return "", ""
}

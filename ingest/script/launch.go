package script

import (
	"path/filepath"
	"regexp"
	"strings"
)

// Launch commands: ray job submit ... -- python3 train.py ..., torchrun,
// deepspeed, accelerate launch, python [-m pkg] script.py, bash -c / bash
// x.sh, srun / mpirun, behind wrappers such as env, nohup or stdbuf. Their
// arguments become flag rows; every other command is ignored.

// Command is one launch command found in the script.
type Command struct {
	Name    string // "ray job submit", "python3 -m relax.entrypoints.train", "torchrun pretrain_gpt.py" ...
	Program string // the module or script path as expanded
	File    string
	Line    int
	Branch  string
	Taken   Taken
}

var launchers = map[string]bool{"torchrun": true, "deepspeed": true, "accelerate": true, "ray": true,
	"bash": true, "sh": true, "zsh": true, "srun": true, "mpirun": true, "mpiexec": true}

func isPython(base string) bool {
	return base == "python" || strings.HasPrefix(base, "python3") || strings.HasPrefix(base, "python2") || strings.HasPrefix(base, "pypy")
}

func isLauncher(base string) bool {
	return launchers[base] || isPython(base) || strings.HasSuffix(base, ".py")
}

// wrappers run the command that follows them.
var wrappers = map[string]bool{"env": true, "nohup": true, "exec": true, "time": true, "command": true,
	"builtin": true, "sudo": true, "stdbuf": true, "nice": true, "numactl": true, "taskset": true, "timeout": true}

// launch records a launch command's flags; false when fs launches nothing.
func (it *interp) launch(fs []field) bool {
	for len(fs) > 0 && wrappers[filepath.Base(fs[0].text)] {
		w := filepath.Base(fs[0].text)
		fs = fs[1:]
		for len(fs) > 0 && !isLauncher(filepath.Base(fs[0].text)) && !wrappers[filepath.Base(fs[0].text)] {
			if w == "env" {
				if name, val, ok := strings.Cut(fs[0].text, "="); ok && isName(name) {
					it.emitEnv(name, val, fs[0].org.raw, fs[0].org)
				}
			}
			fs = fs[1:] // wrapper options and their values
		}
	}
	if len(fs) == 0 {
		return false
	}
	return it.launchAt(fs)
}

func (it *interp) launchAt(fs []field) bool {
	base := filepath.Base(fs[0].text)
	switch {
	case base == "ray" && len(fs) >= 3 && fs[1].text == "job" && fs[2].text == "submit":
		k := 3
		for k < len(fs) && fs[k].text != "--" {
			k++
		}
		it.emitArgs("ray job submit", fs[3:k], fs[0])
		if k+1 < len(fs) && !it.launchAt(fs[k+1:]) {
			it.emitArgs(filepath.Base(fs[k+1].text), fs[k+2:], fs[k+1])
		}
		return true
	case base == "ray" && len(fs) >= 2 && fs[1].text == "start":
		it.emitArgs("ray start", fs[2:], fs[0])
		return true
	case isPython(base):
		return it.python(base, fs)
	case base == "torchrun" || base == "deepspeed":
		return it.distLauncher(base, fs[1:], fs[0])
	case base == "accelerate" && len(fs) > 1 && fs[1].text == "launch":
		return it.distLauncher("accelerate launch", fs[2:], fs[0])
	case base == "bash" || base == "sh" || base == "zsh":
		j := 1
		for ; j < len(fs) && strings.HasPrefix(fs[j].text, "-"); j++ {
			if fs[j].text == "-c" && j+1 < len(fs) {
				if it.callDepth < 8 {
					it.callDepth++
					it.runString(fs[j+1].text, fs[j+1].org.line)
					it.callDepth--
				}
				return true
			}
		}
		if j < len(fs) {
			it.emitArgs(base+" "+filepath.Base(fs[j].text), fs[j+1:], fs[j])
			return true
		}
	case base == "srun" || base == "mpirun" || base == "mpiexec":
		for k := 1; k < len(fs); k++ {
			if b := filepath.Base(fs[k].text); isLauncher(b) && !strings.HasPrefix(b, "-") {
				it.emitArgs(base, fs[1:k], fs[0])
				return it.launchAt(fs[k:]) || true
			}
		}
	case strings.HasSuffix(base, ".py"):
		it.emitArgs(base, fs[1:], fs[0])
		return true
	}
	return false
}

func (it *interp) python(base string, fs []field) bool {
	for j := 1; j < len(fs); j++ {
		t := fs[j].text
		switch {
		case t == "-m" && j+1 < len(fs):
			mod := fs[j+1].text
			name := base + " -m " + mod
			if mod == "torch.distributed.run" || mod == "torch.distributed.launch" {
				return it.distLauncher(name, fs[j+2:], fs[0])
			}
			it.emitArgs(name, fs[j+2:], fs[j+1])
			return true
		case t == "-c":
			return false // inline code: nothing to audit
		case t == "-X" || t == "-W":
			j++
		case strings.HasPrefix(t, "-") && len(t) > 1:
		default:
			it.emitArgs(base+" "+filepath.Base(t), fs[j+1:], fs[j])
			return true
		}
	}
	return false
}

// distLauncher splits torchrun-like arguments into the launcher's own
// options and the script with its flags.
func (it *interp) distLauncher(name string, fs []field, at field) bool {
	j := 0
	for j < len(fs) && isFlagText(fs[j].text) {
		t := fs[j].text
		if (t == "-m" || t == "--module") && j+1 < len(fs) {
			it.emitArgs(name, fs[:j], at)
			it.emitArgs(name+" "+fs[j+1].text, fs[j+2:], fs[j+1])
			return true
		}
		if strings.Contains(t, "=") || j+1 >= len(fs) {
			j++
			continue
		}
		if n := fs[j+1].text; !isFlagText(n) && !strings.HasSuffix(n, ".py") && !strings.HasSuffix(n, ".sh") {
			j += 2
		} else {
			j++
		}
	}
	it.emitArgs(name, fs[:j], at)
	if j < len(fs) {
		it.emitArgs(name+" "+filepath.Base(fs[j].text), fs[j+1:], fs[j])
	}
	return true
}

// isFlagText: -x, --name; not a negative number, not "--" alone.
func isFlagText(t string) bool {
	if len(t) < 2 || t[0] != '-' {
		return false
	}
	if t[1] == '-' {
		return len(t) > 2 && (isAlpha(t[2]) || t[2] == '_')
	}
	return isAlpha(t[1])
}

var hydraRE = regexp.MustCompile(`^(\+\+|\+|~)?([A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+)*)(?:=(.*))?$`)

// hydra parses a Hydra override key=value, +key=value, ++key=value or
// ~key; dotted is true when it cannot be an ordinary value.
func hydra(t string) (key, value string, hasValue, dotted, ok bool) {
	m := hydraRE.FindStringSubmatch(t)
	if m == nil {
		return "", "", false, false, false
	}
	hasValue = strings.Contains(t, "=")
	if !hasValue && m[1] != "~" {
		return "", "", false, false, false
	}
	return m[2], m[3], hasValue, m[1] != "" || strings.Contains(m[2], "."), true
}

// emitArgs turns a command's arguments into flag rows. at is the command
// word; cmd "" marks arrays no launch command used.
func (it *interp) emitArgs(cmd string, fs []field, at field) {
	if cmd != "" && at.org != nil {
		frames := it.currentFrames()
		it.s.Commands = append(it.s.Commands, Command{Name: cmd, Program: at.text, File: at.org.file, Line: at.org.line,
			Branch: branchText(frames), Taken: framesTaken(frames)})
	}
	for i := 0; i < len(fs); {
		f := fs[i]
		if f.org != nil && f.org.commentedOut {
			if name, val, sw := splitFlagText(f.text); name != "" {
				it.emitFlag(cmd, name, val, sw, f, nil)
			}
			i++
			continue
		}
		t := f.text
		if isFlagText(t) {
			if k := strings.IndexByte(t, '='); k > 0 && strings.HasPrefix(t, "--") {
				it.emitFlag(cmd, t[:k], t[k+1:], false, f, nil)
				i++
				continue
			}
			j := i + 1
			for j < len(fs) && !(fs[j].org != nil && fs[j].org.commentedOut) && !isFlagText(fs[j].text) && fs[j].text != "--" {
				if _, _, _, dotted, ok := hydra(fs[j].text); ok && (dotted || j > i+1) {
					break
				}
				j++
			}
			var vals []string
			for _, v := range fs[i+1 : j] {
				vals = append(vals, v.text)
			}
			it.emitFlag(cmd, t, strings.Join(vals, " "), j == i+1, f, fs[i+1:j])
			i = j
			continue
		}
		if key, val, hasValue, _, ok := hydra(t); ok {
			it.emitFlag(cmd, key, val, !hasValue, f, nil)
		}
		i++
	}
}

// splitFlagText splits the text of a commented-out flag line.
func splitFlagText(s string) (name, value string, sw bool) {
	if i := strings.Index(s, " #"); i > 0 { // its own trailing comment
		s = s[:i]
	}
	name, value, _ = strings.Cut(strings.TrimSpace(s), " ")
	if k := strings.IndexByte(name, '='); k > 0 {
		return name[:k], name[k+1:], false
	}
	value = strings.TrimSpace(value)
	return name, value, value == ""
}

func (it *interp) emitFlag(cmd, name, value string, sw bool, f field, vals []field) {
	org := f.org
	if org == nil {
		org = &origin{file: it.curFile()}
	}
	org.emitted = true
	raw := org.raw
	last := org
	for _, v := range vals {
		if v.org != nil {
			v.org.emitted = true
			if v.org != last {
				raw += " " + v.org.raw
				last = v.org
			}
		}
	}
	frames := mergeFrames(org.frames, it.currentFrames())
	it.emitRow(Flag{File: org.file, Line: org.line, Array: org.array, Command: cmd,
		Branch: branchText(frames), Taken: framesTaken(frames),
		Flag: name, Value: value, Switch: sw, Raw: raw, Comment: org.comment})
}

func (it *interp) emitEnv(name, value, raw string, org *origin) {
	if org == nil {
		org = &origin{file: it.curFile()}
	}
	frames := mergeFrames(org.frames, it.currentFrames())
	it.emitRow(Flag{File: org.file, Line: org.line, Command: "env", Branch: branchText(frames),
		Taken: framesTaken(frames), Flag: name, Value: value, Raw: raw, Comment: org.comment})
}

func (it *interp) emitRow(f Flag) {
	if len(it.s.Flags) == maxFlags {
		it.problem(0, "more than 262144 flag occurrences: the rest are not reported")
	}
	if len(it.s.Flags) >= maxFlags || it.work > maxWork {
		return
	}
	it.work += 128 + len(f.Value) + len(f.Raw) + len(f.Branch) + len(f.Comment) + len(f.File)
	f.Seq = len(it.s.Flags)
	it.s.Flags = append(it.s.Flags, f)
}

// mergeFrames joins the frames an element was written under with those of
// the command that uses it, each frame once.
func mergeFrames(a, b []*frame) []*frame {
	out := append([]*frame(nil), a...)
	for _, f := range b {
		dup := false
		for _, g := range out {
			if g == f {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, f)
		}
	}
	return out
}

func branchText(frames []*frame) string {
	var parts []string
	for _, f := range frames {
		parts = append(parts, f.text)
	}
	return strings.Join(parts, " && ")
}

func framesTaken(frames []*frame) Taken {
	t := TakenYes
	for _, f := range frames {
		t = tand(t, f.taken)
	}
	return t
}

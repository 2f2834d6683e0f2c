// Package script reads training launch scripts (bash) for the config
// audit: every flag the script passes, where it is written and under which
// condition, and the context those flags describe (framework, model, GPUs,
// parallelism, sequence lengths). It never runs a shell, a command or a
// command substitution.
//
// # Who does what
//
// Lexing and parsing are mvdan.cc/sh/v3/syntax's (the parser behind
// shfmt), in bash mode with comments kept: quotes, escapes, line
// continuations, here-documents, $( ), ${ }, $(( )), [[ ]], arrays, if /
// case / for / while, functions, and the position (line) of every node.
// mvdan's expand and interp packages are not used: they run commands and
// read the environment, where this package must never run anything and
// must say what it could not know. Everything after the tree is ours:
//
//   - evaluation (exec.go, commands.go): variables, branches with their
//     condition text and whether they run, source, functions, arrays, exit;
//   - expansion (expand.go, paramops.go, arith.go): parameter operators,
//     word splitting, integer arithmetic, unknown values kept as written;
//   - conditions (cond.go): [ ], test and [[ ]] evaluated three-valued;
//   - comments (tree.go): mvdan attaches each comment to a node; we attach
//     it to a line, so that a flag gets the comment on its line, the lines
//     above it and the NOTE heading its block, and a "# --flag value" line
//     inside an array is a commented-out element;
//   - launches (launch.go) and the context (context.go, gpus.go, params.go).
//
// Where bash and mvdan disagree we follow bash. An array element such as
// [0]*3+[1]*5 that is not [index]=value, and a byte that is not UTF-8 (a
// Latin-1 or GBK comment), are text to bash but errors to mvdan: the
// parser is shown a same-length stand-in and values are read from the text
// as written (parse.go). mvdan nests [[ a && b || c ]] as a && (b || c);
// the test is read again with bash's precedence (cond.go).
//
// # What it reads
//
// Comments, line continuations, quotes ('...', "...", $'...'), variables
// (X=..., export X=..., $X, ${X}, ${X:-d}, ${X:=d}, ${X:+a}, ${#X}, ${X%p},
// ${X/a/b}, $(( integer arithmetic ))), bash arrays NAME=( ... ) and
// NAME+=( ... ) expanded by "${NAME[@]}", source FILE / . FILE (relative
// to the file's folder, through $(dirname "$0"), ${BASH_SOURCE[0]} and
// variables such as ${MODEL_CONFIG_DIR}), if / elif / else / case / for /
// while, functions, and launch commands: ray job submit ... -- python3 x.py,
// torchrun, deepspeed, accelerate launch, python [-m pkg] x.py, bash -c and
// bash x.sh, srun / mpirun, behind env / nohup / stdbuf. Their arguments
// become flags: --flag value, --flag=value, boolean --flag, and Hydra
// overrides a.b.c=value (+, ++ and ~ prefixes).
//
// # What is known
//
// A value is known when the script computes it from literals, from
// Options.Env and Options.Args. A variable the script reads without
// assigning it is unset: ${X:-default} takes its default (what runs when
// the caller passes nothing), a bare $X is unknown. Command substitutions
// are unknown, except the script-folder idiom $(cd "$(dirname ...)" && pwd).
// An unknown value keeps the text it could not expand ("${HOST_IP}:8265"),
// so nothing unknown is ever replaced by a guess.
//
// Every flag occurrence carries its branch: the condition text of each
// enclosing if / elif / else / case / loop and whether it runs (Taken):
// TakenYes, TakenNo, or TakenUnknown when the condition depends on an
// unknown value, a command's status or the file system. Flags in branches
// that do not run are still reported; a "# --flag value" line inside an
// array is reported as branch "commented out", not taken. An exit that
// surely runs marks the rest of the script not taken; an exit behind an
// unknown guard ([ -f x ] || exit 1) is assumed not to fire.
//
// A comment attaches to a flag when it is on the flag's line, on the lines
// right above it, or is a "# NOTE(...)" / "# NOTE:" comment heading the
// flag's block (up to a blank line): perf rules read it as the author's
// reason for a setting.
//
// # Errors and problems
//
// Parse and ParseFile return an error only when the input is not a shell
// script (a binary file) or cannot be read. Everything else is a Problem
// naming the file and line and what was expected, and parsing carries on:
// the Script holds everything that could be read. An unterminated quote,
// array, substitution, if or loop is closed at the end of the file (mvdan's
// error recovery) and reported; another syntax error drops the statement it
// is in, is reported with mvdan's message, and reading resumes on the next
// line. A missing sourced file, an array expanded but never defined, a
// construct not evaluated (eval) are problems too. Input is bounded (file
// size, parser recursion, source depth, value and array sizes, commands
// evaluated), so hostile input costs bounded time and memory: mvdan's
// parser has no nesting limit of its own, so the reader that feeds it stops
// it when its recursion runs deep (parse.go).
//
// # Tables
//
// Script.Records builds the script_flags and script_context batches
// (stream.ScriptFlagsSchema, stream.ScriptContextSchema). The caller owns
// the returned records and releases them.
//
// # Context
//
// Context fields are read from flags where the script states them and
// derived otherwise; each derived field says how in Context.Derived (for
// instance "dp: training GPUs / (tp×pp×cp) = 8/4" or "nodes, gpus_per_node:
// from gpus, assuming 8 GPUs per node"). A field neither stated nor
// derivable is nil. The file-name convention
// run-<model>-<size>-<N>x<gpu>(-async|-image|-video|-colocate|-hybrid|...).sh
// supplies defaults for the GPU count, mode and modality; flags win over it.
package script

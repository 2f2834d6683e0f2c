package script

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
)

var fuzzSeeds = []string{
	"ARGS=(\n  --a 1 # c\n  # --b 2\n)\npython3 x.py \"${ARGS[@]}\" --c=3\n",
	"X=${Y:-${Z:=5}}; echo $((X*2)); python t.py --x $X\n",
	"if [ \"$M\" = a ]; then A=1; elif [[ $M == b* ]]; then A=2; else A=3; fi\n",
	"case $M in a|b) python a.py --a ;; *) python b.py --b ;; esac\n",
	"source ./a.sh\n. \"$(dirname \"$0\")/b.sh\"\n",
	"ray job submit --x=1 -- python3 -m m.n a.b=1 +c.d=2 ~e\n",
	"torchrun --nproc_per_node 8 p.py --tp 2 ${A[@]}\n",
	"bash -c \"python3 t.py --q '$X'\"\n",
	"f() { python x.py --in-func; }\nf a b\n",
	"for ((i=0;i<3;i++)); do A+=($i); done\nwhile true; do break; done\n",
	"cat <<EOF\n--not-a-flag\nEOF\npython3 x.py --after\n",
	"X=$'a\\tb\\x41\\101'\n",
	"A=(\n", "B=\"abc\n", "C='x\n", "D=$(echo\n", "E=${F\n", "if x; then\n", "case a in\n",
	"(( a = 1 + 2 ** 70 / 0 ))\n",
	"X=a\nX=$X$X\nX=$X$X\nX=$X$X\n",
	"[[ a < b && ( c != d || ! e ) ]] && python x.py --ok\n",
}

// FuzzScript: any input parses without panicking or hanging, and its
// records build.
func FuzzScript(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	// the corpus's launch scripts, when it is there: a missing seed must
	// not skip the fuzz target
	if root := corpus.Root(); root != "" {
		filepath.WalkDir(filepath.Join(root, "scripts"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".sh") {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(b)
				}
			}
			return err
		})
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		// every sourced file is the input again, so sourcing recurses; cut
		// to 2 KiB to keep each run quick enough to explore
		sourced := src[:min(len(src), 2048)]
		opt := Options{Args: []string{"async"}, readFile: func(string) ([]byte, error) { return sourced, nil }}
		s, err := Parse("/fuzz/run-x-8xgpu.sh", src, opt)
		if s == nil {
			t.Fatal("nil script")
		}
		if err != nil && len(s.Problems) == 0 {
			t.Fatalf("error %v without a problem", err)
		}
		for i, fl := range s.Flags {
			if fl.Seq != i || fl.File == "" || fl.Flag == "" {
				t.Fatalf("bad row %d: %+v", i, fl)
			}
		}
		flags, c := s.Records("fuzz")
		if flags.NumRows() != int64(len(s.Flags)) || c.NumRows() != 1 {
			t.Fatalf("records: %d/%d", flags.NumRows(), c.NumRows())
		}
		flags.Release()
		c.Release()
	})
}

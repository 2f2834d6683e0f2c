package ondemand

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestParseEnviron(t *testing.T) {
	env := "PATH=/bin\x00RANK=3\x00LOCAL_RANK=1\x00WORLD_SIZE=16\x00TORCHELASTIC_RUN_ID=none\x00SLURM_JOB_ID=881\x00" +
		"TRAINSCOPE_RUN=llama-7b\x00KINETO_ONDEMAND_TRACE_DIR=/scratch/t\x00NOEQUALS\x00SECRET=x"
	info := ParseEnviron([]byte(env))
	want := ProcInfo{Rank: 3, LocalRank: 1, WorldSize: 16, Run: "llama-7b", JobID: "881", TraceDir: "/scratch/t"}
	if info != want {
		t.Fatalf("%+v, want %+v", info, want)
	}
	info = ParseEnviron([]byte("RANK=-1\x00LOCAL_RANK=x\x00WORLD_SIZE=99999999999\x00TORCHELASTIC_RUN_ID=abc\x00TRAINSCOPE_RUN=a\nb"))
	if info.Rank != -1 || info.LocalRank != -1 || info.WorldSize != -1 || info.JobID != "abc" || info.Run != "" {
		t.Fatalf("bad values kept: %+v", info)
	}
	if (ParseEnviron(nil) != ProcInfo{Rank: -1, LocalRank: -1, WorldSize: -1}) {
		t.Fatal("empty environment")
	}
}

func TestProcFS(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "77")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "status"), []byte("Name:\tpython\nUid:\t1234\t1234\t1234\t1234\nGid:\t5\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "environ"), []byte("RANK=5\x00LOCAL_RANK=5\x00"), 0o644)
	inspect := ProcFS(root)
	info, err := inspect(Peer{PID: 9, Cred: true, HostPID: 77}) // the kernel's pid wins
	if err != nil || info.UID != 1234 || info.Rank != 5 {
		t.Fatal(info, err)
	}
	if _, err := inspect(Peer{PID: 9}); err == nil {
		t.Fatal("inspected a missing process")
	}
	os.WriteFile(filepath.Join(dir, "status"), []byte("Name:\tpython\n"), 0o644)
	if _, err := inspect(Peer{PID: 77}); err == nil || !strings.Contains(err.Error(), "no Uid line") {
		t.Fatal(err)
	}
	if runtime.GOOS != "linux" {
		return
	}
	// this very process, through the real /proc
	info, err = ProcFS("/proc")(Peer{PID: os.Getpid()})
	if err != nil || info.UID != os.Getuid() {
		t.Fatal(info, err)
	}
}

// FuzzEnviron: /proc/PID/environ is written by whatever the process
// is; the parser must keep only sane values and never panic.
func FuzzEnviron(f *testing.F) {
	f.Add([]byte("RANK=3\x00LOCAL_RANK=1\x00WORLD_SIZE=16\x00TRAINSCOPE_RUN=r\x00"))
	f.Add([]byte("=\x00\x00RANK=\x00TORCHELASTIC_RUN_ID=none"))
	f.Add([]byte("KINETO_ONDEMAND_TRACE_DIR=/t\x00SLURM_JOB_ID=1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		info := ParseEnviron(b)
		for _, n := range []int{info.Rank, info.LocalRank, info.WorldSize} {
			if n < -1 || n > 1<<24 {
				t.Fatalf("number %d kept", n)
			}
		}
		for _, s := range []string{info.Run, info.JobID, info.TraceDir} {
			if strings.ContainsAny(s, "\x00\n\r") || len(s) > 4096 {
				t.Fatalf("value %q kept", s)
			}
		}
	})
}

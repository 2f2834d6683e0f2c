package transport

import (
	"strings"
	"testing"
)

func TestPartitionSubjects(t *testing.T) {
	sc := StreamConfig{Cluster: "prod", Partitions: 8}
	for _, c := range []struct{ got, want string }{
		{sc.PartitionFilter(3), "trainscope.prod.*.*.*.3"},
		{sc.ForwardFilter("ing-0"), "trainscope.prod.*.*.*.to-ing-0"},
		{sc.ForwardFilter("pod.1"), "trainscope.prod.*.*.*.to-pod_1"},
		{sc.RunFilter("job.1", "", ""), "trainscope.prod.job_1.>"},
		{sc.RunFilter("job", "steps", ""), "trainscope.prod.job.*.steps"},
		{sc.RunFilter("job", "", "5"), "trainscope.prod.job.*.*.5"},
		{sc.RunFilter("job", "ranks", ForwardSuffix("b")), "trainscope.prod.job.*.ranks.to-b"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	for _, c := range []struct{ in, want, err string }{
		{"trainscope.prod.job.h.steps", "trainscope.prod.job.h.steps.to-b", ""},
		{"trainscope.prod.job.h.steps.3", "trainscope.prod.job.h.steps.to-b", ""},
		{"trainscope.prod.job.h.steps.to-a", "trainscope.prod.job.h.steps.to-b", ""},
		{"trainscope.prod.job", "", "is not"},
	} {
		got, err := ForwardSubject(c.in, "b")
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("ForwardSubject(%q) = %q, %v", c.in, got, err)
		}
	}
	for _, c := range []struct {
		subject string
		ok      bool
	}{
		{"trainscope.prod.job.h.steps", true},
		{"trainscope.prod.job.h.steps.7", true},
		{"trainscope.prod.job.h.steps.to-ing-1", true},
		{"trainscope.prod.job.h.steps.x", false},
		{"trainscope.prod.other.h.steps.1", false},
		{"trainscope.prod.job.h.steps.1.2", false},
	} {
		if err := CheckSubject(c.subject, "job", "steps"); (err == nil) != c.ok {
			t.Errorf("CheckSubject(%q) = %v, want ok %v", c.subject, err, c.ok)
		}
		if c.ok && (SubjectRun(c.subject) != "job" || SubjectTable(c.subject) != "steps") {
			t.Errorf("%q: run %q table %q", c.subject, SubjectRun(c.subject), SubjectTable(c.subject))
		}
	}
	// one partition, or none: everything in partition 0
	if PartitionOf("anything", 1) != 0 || PartitionOf("anything", 0) != 0 {
		t.Error("PartitionOf with fewer than two partitions")
	}
	if err := (StreamConfig{Name: "S", Cluster: "c", Duplicates: 1, Replicas: 1, Partitions: 2000}).Validate("stream"); err == nil || !strings.Contains(err.Error(), "stream.partitions") {
		t.Errorf("2000 partitions: %v", err)
	}
}

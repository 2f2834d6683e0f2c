package transport

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Partitions spread runs over several ingestors. With stream.partitions
// N > 1 the stream stores every batch under its publish subject with one
// more token, the run's partition: the stream's subject transform
// {{partition(N,3)}} hashes the run token, so that every batch of a run
// lands in one partition, and each ingestor consumes the partitions it
// holds a lease on. A batch that reaches an ingestor which does not own
// its run is forwarded to the owner on the same subject with the token
// "to-<owner>" in place of the partition. Publishers are unchanged: they
// publish on Subject's five tokens.

// HeaderOrigMsgID carries a forwarded batch's own id: the owner records
// and deduplicates it under that id, not under the forward's.
const HeaderOrigMsgID = "Trainscope-Orig-Msg-Id"

// forwardPrefix starts the sixth token of a forwarded batch's subject.
const forwardPrefix = "to-"

// PartitionOf is the partition the stream's transform gives a run token
// out of n: FNV-1a of the token, modulo n, as nats-server computes
// partition(n, ...).
func PartitionOf(runToken string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(runToken))
	return int(h.Sum32() % uint32(n))
}

// Partitioned says whether cfg spreads runs over partitions.
func (c StreamConfig) Partitioned() bool { return c.Partitions > 1 }

func (c StreamConfig) prefix() string { return "trainscope." + token(c.Cluster) }

// PartitionFilter is the subject filter of partition p's batches.
func (c StreamConfig) PartitionFilter(p int) string {
	return c.prefix() + ".*.*.*." + strconv.Itoa(p)
}

// ForwardFilter is the subject filter of the batches forwarded to member.
func (c StreamConfig) ForwardFilter(member string) string {
	return c.prefix() + ".*.*.*." + forwardPrefix + token(member)
}

// RunFilter is the subject filter of run's batches that carry suffix as
// their sixth token; with suffix "", of its batches on five tokens (with
// table "" too: of all its batches). table, when set, narrows it to one
// table.
func (c StreamConfig) RunFilter(run, table, suffix string) string {
	t := "*"
	if table != "" {
		t = token(table)
	}
	switch {
	case suffix == "" && table == "":
		return RunSubjects(c.Cluster, run)
	case suffix == "":
		return c.prefix() + "." + token(run) + ".*." + t
	}
	return c.prefix() + "." + token(run) + ".*." + t + "." + suffix
}

// PartitionSuffix and ForwardSuffix are the sixth tokens RunFilter takes.
func PartitionSuffix(p int) string       { return strconv.Itoa(p) }
func ForwardSuffix(member string) string { return forwardPrefix + token(member) }

// ForwardSubject is subject (a stored batch's, five or six tokens) with
// its sixth token naming member as the batch's destination.
func ForwardSubject(subject, member string) (string, error) {
	parts := strings.Split(subject, ".")
	switch len(parts) {
	case 5:
		parts = append(parts, "")
	case 6:
	default:
		return "", fmt.Errorf("subject %q is not trainscope.<cluster>.<run>.<host>.<table>[.<partition>]", subject)
	}
	parts[5] = forwardPrefix + token(member)
	return strings.Join(parts, "."), nil
}

// MemberToken is how a member's name appears in subjects, consumer and
// key names.
func MemberToken(member string) string { return token(member) }

// subjectTransform is the transform that adds the partition token.
func (c StreamConfig) subjectTransform() (src, dst string) {
	return c.prefix() + ".*.*.*", fmt.Sprintf("%s.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}.{{partition(%d,1)}}", c.prefix(), c.Partitions)
}

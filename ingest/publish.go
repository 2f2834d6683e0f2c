package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/trainscope/trainscope/stream/transport"
)

// PublishSink sends what Read produces to JetStream. Each artifact is a
// producer of its own whose id is derived from the run, the file and its
// size and modification time: publishing the same file again sends the
// same message ids, which JetStream and the ingestor drop.
type PublishSink struct {
	P     *transport.Publisher
	RunID string
	Host  string
	// Salt makes the ids of a filtered publish (some steps only) differ
	// from those of the whole file.
	Salt string
}

// BeginArtifact starts the messages of one file.
func (s *PublishSink) BeginArtifact(path string) {
	s.P.Begin(ProducerID(s.RunID, path, s.Salt))
}

// Insert publishes rec. Before a ranks row, which tells the ingestor that
// an artifact is complete, it waits until everything sent before is
// acknowledged, so that the row cannot overtake the batches it vouches for.
func (s *PublishSink) Insert(ctx context.Context, table string, rec arrow.RecordBatch) error {
	if table == "ranks" {
		if err := s.P.Flush(ctx); err != nil {
			return err
		}
	}
	return s.P.Publish(ctx, s.RunID, s.Host, table, rec)
}

// ProducerID names the messages of one artifact of a run.
func ProducerID(runID, path, salt string) string {
	h := sha256.New()
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	h.Write([]byte(runID + "\x00" + abs + "\x00" + salt + "\x00"))
	if st, err := os.Stat(path); err == nil {
		h.Write([]byte(strconv.FormatInt(st.Size(), 10) + "\x00" + strconv.FormatInt(st.ModTime().UnixNano(), 10)))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

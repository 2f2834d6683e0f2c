package transport

import (
	"errors"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A stream can lose batches that were stored: one configured to drop its
// oldest messages when full (stream.discard: old) drops them whether or
// not the ingestor has read them, max_age expires them, someone deletes
// them. Every publisher says so: "published". So an artifact declares how
// many batches it sent, and the ingestor compares.
//
// HeaderBatches rides on the last message of an artifact's ranks batch,
// the row that tells the ingestor a trace is complete (PublishSink waits
// for every earlier message's acknowledgement before it): N, the number
// of messages the producer has sent, this one included. Their ids are
// <producer>-1 .. <producer>-N, this one's <producer>-N. An ingestor that
// holds fewer of them records each missing one in rejected_batches with a
// reason starting stream.MissingReason and the stream.Gap in its headers
// column, so that the run's report says what never arrived.
const HeaderBatches = "Trainscope-Batches"

// Declared reads a message's declaration: the producer of id
// (<producer>-N) and N, when its HeaderBatches says N. ok is false when it
// declares nothing or its id is not the Nth of a producer.
func Declared(id string, h nats.Header) (producer string, n int, ok bool) {
	v := h.Get(HeaderBatches)
	if v == "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(v)
	i := strings.LastIndexByte(id, '-')
	if err != nil || n < 1 || i <= 0 || id[i+1:] != v {
		return "", 0, false
	}
	return id[:i], n, true
}

// BatchNumber is N of a message id <producer>-N, or 0.
func BatchNumber(id, producer string) int {
	rest, ok := strings.CutPrefix(id, producer+"-")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// StreamFull says whether err is a stream refusing a message because it
// is at its limits (discard new): maximum bytes or messages exceeded.
func StreamFull(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	d := strings.ToLower(apiErr.Description)
	return strings.Contains(d, "maximum bytes exceeded") || strings.Contains(d, "maximum messages exceeded")
}

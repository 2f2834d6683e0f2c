// Package transport carries trainscope's event model (package stream) over
// NATS JetStream: the wire codec (one Arrow IPC stream per message,
// labelled with its table and schema version; Messages cuts a record into
// messages of a target size), the checks a consumer makes of a message
// before and after it decodes it (CheckMessage, CheckBatch), subjects
// (trainscope.<cluster>.<run>.<host>.<table>) and the partitions and
// forwards a fleet of ingestors adds to them, the stream and its limits,
// the embedded server, client connections, the publisher (async, bounded
// in flight, Nats-Msg-Id = producer + sequence, a batch count declared on
// an artifact's last message) and retries of transient JetStream errors.
//
// transport imports stream and nothing else of ours. The store (sql/...),
// the detectors and the readers (ingest/*) do not import it: what they
// need of a run's names (stream.RunToken) and of its lost batches
// (stream.Gap, stream.MissingReason) is in the model. The commands and the
// ingest pipeline wire the two.
package transport

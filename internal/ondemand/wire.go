package ondemand

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// The IPC fabric's datagram: a fixed header (Metadata: an 8-byte size_t
// payload length in host byte order, then a 32-byte NUL-padded type name),
// then exactly that many payload bytes. Every host libkineto runs on
// (x86-64, aarch64) is little-endian with an 8-byte size_t, so that is what
// this side reads and writes.
const (
	typeSize   = 32
	headerSize = 8 + typeSize

	// TypeContext is a registration (LibkinetoContext: gpu, pid, job id);
	// the daemon answers with the same type and an int32.
	TypeContext = "ctxt"
	// TypeRequest is a config poll (LibkinetoRequest: config type, pid
	// count, job id, pids); the daemon answers with the same type and the
	// config text, empty when nothing is pending.
	TypeRequest = "req"

	contextSize    = 16 // int32 gpu, int32 pid, int64 job id
	requestHdrSize = 16 // int32 type, int32 n, int64 job id, then int32 pids[n]

	// MaxPIDs bounds a poll's pid list: libkineto sends the process and at
	// most 10 ancestors (kMaxParentPids = 10).
	MaxPIDs = 64
	// MaxDatagram bounds what the daemon reads: a poll with MaxPIDs pids is
	// 40+16+256 bytes; anything longer is not libkineto's.
	MaxDatagram = headerSize + requestHdrSize + 4*MaxPIDs

	// MaxConfigBytes bounds a config reply the daemon sends (and the fake
	// client accepts).
	MaxConfigBytes = 4096
)

// Config types a poll asks for (a bit mask, libkineto's LibkinetoConfigType).
const (
	ConfigEvents     = 0x1
	ConfigActivities = 0x2
)

// Message is one decoded datagram.
type Message struct {
	Type    string
	Payload []byte
}

// Context is a registration: libkineto's registerInstance(gpu).
type Context struct {
	GPU   int32
	PID   int32
	JobID int64
}

// Poll is a config request: libkineto's getLibkinetoOndemandConfig(type).
// PIDs are the process and its ancestors, the process first, as the
// process sees them (its own pid namespace).
type Poll struct {
	ConfigType int32
	JobID      int64
	PIDs       []int32
}

var (
	errShort = errors.New("shorter than the 40-byte header")
	errLong  = fmt.Errorf("longer than %d bytes", MaxDatagram)
)

// Decode reads one datagram sent to the daemon: the header, and a payload
// exactly as long as the header says. It does not interpret the payload.
func Decode(b []byte) (Message, error) {
	if len(b) > MaxDatagram {
		return Message{}, errLong
	}
	return decode(b)
}

// DecodeReply reads one datagram the daemon sent (the fake client's side):
// as Decode, with room for a config of up to MaxConfigBytes.
func DecodeReply(b []byte) (Message, error) {
	if len(b) > headerSize+MaxConfigBytes {
		return Message{}, fmt.Errorf("reply longer than %d bytes", headerSize+MaxConfigBytes)
	}
	return decode(b)
}

func decode(b []byte) (Message, error) {
	if len(b) < headerSize {
		return Message{}, errShort
	}
	size := binary.LittleEndian.Uint64(b[:8])
	if size != uint64(len(b)-headerSize) {
		return Message{}, fmt.Errorf("header says %d payload bytes, the datagram carries %d", size, len(b)-headerSize)
	}
	name := b[8:headerSize]
	n := bytes.IndexByte(name, 0)
	if n < 0 {
		return Message{}, errors.New("type name not NUL-terminated")
	}
	if n == 0 {
		return Message{}, errors.New("empty type name")
	}
	for _, c := range name[:n] {
		if c < 0x21 || c > 0x7e {
			return Message{}, fmt.Errorf("type name %q is not printable ASCII", name[:n])
		}
	}
	return Message{Type: string(name[:n]), Payload: b[headerSize:]}, nil
}

// Encode builds a datagram of type typ carrying payload.
func Encode(typ string, payload []byte) ([]byte, error) {
	if len(typ) == 0 || len(typ) >= typeSize {
		return nil, fmt.Errorf("type name %q: want 1 to %d bytes", typ, typeSize-1)
	}
	b := make([]byte, headerSize+len(payload))
	binary.LittleEndian.PutUint64(b, uint64(len(payload)))
	copy(b[8:], typ)
	copy(b[headerSize:], payload)
	return b, nil
}

// DecodeContext reads a registration's payload.
func DecodeContext(p []byte) (Context, error) {
	if len(p) != contextSize {
		return Context{}, fmt.Errorf("registration of %d bytes, want %d", len(p), contextSize)
	}
	c := Context{
		GPU:   int32(binary.LittleEndian.Uint32(p[0:])),
		PID:   int32(binary.LittleEndian.Uint32(p[4:])),
		JobID: int64(binary.LittleEndian.Uint64(p[8:])),
	}
	if c.PID <= 0 {
		return Context{}, fmt.Errorf("registration with pid %d", c.PID)
	}
	return c, nil
}

// EncodeContext is a registration's payload (the fake client sends it).
func EncodeContext(c Context) []byte {
	p := make([]byte, contextSize)
	binary.LittleEndian.PutUint32(p[0:], uint32(c.GPU))
	binary.LittleEndian.PutUint32(p[4:], uint32(c.PID))
	binary.LittleEndian.PutUint64(p[8:], uint64(c.JobID))
	return p
}

// DecodePoll reads a config request's payload: the pid count must match
// the payload's length, lie in 1..MaxPIDs, and every pid be positive.
func DecodePoll(p []byte) (Poll, error) {
	if len(p) < requestHdrSize {
		return Poll{}, fmt.Errorf("config request of %d bytes, want at least %d", len(p), requestHdrSize)
	}
	n := int32(binary.LittleEndian.Uint32(p[4:]))
	if n < 1 || n > MaxPIDs {
		return Poll{}, fmt.Errorf("config request with %d pids, want 1 to %d", n, MaxPIDs)
	}
	if len(p) != requestHdrSize+4*int(n) {
		return Poll{}, fmt.Errorf("config request says %d pids in %d bytes, want %d bytes", n, len(p), requestHdrSize+4*int(n))
	}
	q := Poll{
		ConfigType: int32(binary.LittleEndian.Uint32(p[0:])),
		JobID:      int64(binary.LittleEndian.Uint64(p[8:])),
		PIDs:       make([]int32, n),
	}
	for i := range q.PIDs {
		q.PIDs[i] = int32(binary.LittleEndian.Uint32(p[requestHdrSize+4*i:]))
		if q.PIDs[i] <= 0 {
			return Poll{}, fmt.Errorf("config request with pid %d", q.PIDs[i])
		}
	}
	return q, nil
}

// EncodePoll is a config request's payload (the fake client sends it).
func EncodePoll(q Poll) []byte {
	p := make([]byte, requestHdrSize+4*len(q.PIDs))
	binary.LittleEndian.PutUint32(p[0:], uint32(q.ConfigType))
	binary.LittleEndian.PutUint32(p[4:], uint32(len(q.PIDs)))
	binary.LittleEndian.PutUint64(p[8:], uint64(q.JobID))
	for i, pid := range q.PIDs {
		binary.LittleEndian.PutUint32(p[requestHdrSize+4*i:], uint32(pid))
	}
	return p
}

// contextReply is the daemon's answer to a registration: the number of
// processes of that job registered on that GPU, as dynolog answers.
func contextReply(n int32) []byte {
	p := make([]byte, 4)
	binary.LittleEndian.PutUint32(p, uint32(n))
	b, _ := Encode(TypeContext, p)
	return b
}

// configReply is the daemon's answer to a poll: the config text, "" when
// nothing is pending.
func configReply(config string) []byte {
	b, _ := Encode(TypeRequest, []byte(config))
	return b
}

//go:build linux

package fakekineto

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/trainscope/trainscope/internal/ondemand"
)

// Timeout bounds a wait for the daemon's reply: a failure guard only
// (libkineto itself gives up after 9 tries 10 ms apart).
var Timeout = 30 * time.Second

// Client is one fake PyTorch process.
type Client struct {
	PID       int32
	Ancestors []int32
	JobID     int64
	conn      *net.UnixConn
	daemon    *net.UnixAddr
	// Name is its endpoint's name.
	Name string
}

// Dial binds a client endpoint for process pid (as it reports itself)
// that talks to the daemon named daemon (in socketDir when set, as
// KINETO_IPC_SOCKET_DIR).
func Dial(daemon, socketDir string, pid int32, ancestors []int32, jobID int64) (*Client, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	name := "dynoconfigclient" + hex.EncodeToString(id[:])
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Net: "unixgram", Name: ondemand.Address(name, socketDir)})
	if err != nil {
		return nil, err
	}
	return &Client{PID: pid, Ancestors: ancestors, JobID: jobID, conn: conn, Name: name,
		daemon: &net.UnixAddr{Net: "unixgram", Name: ondemand.Address(daemon, socketDir)}}, nil
}

// Close releases the endpoint.
func (c *Client) Close() error {
	err := c.conn.Close()
	if a := c.conn.LocalAddr(); a != nil && a.String() != "" && a.String()[0] == '/' {
		os.Remove(a.String())
	}
	return err
}

// Send sends a raw datagram to the daemon (malformed ones included).
func (c *Client) Send(b []byte) error {
	_, _, err := c.conn.WriteMsgUnix(b, nil, c.daemon)
	return err
}

// Receive waits for the daemon's next datagram and decodes it.
func (c *Client) Receive() (ondemand.Message, error) {
	buf := make([]byte, 8+32+ondemand.MaxConfigBytes+1)
	c.conn.SetReadDeadline(time.Now().Add(Timeout))
	n, err := c.conn.Read(buf)
	if err != nil {
		return ondemand.Message{}, err
	}
	return ondemand.DecodeReply(buf[:n])
}

func (c *Client) roundTrip(typ string, payload []byte) (ondemand.Message, error) {
	b, err := ondemand.Encode(typ, payload)
	if err != nil {
		return ondemand.Message{}, err
	}
	if err := c.Send(b); err != nil {
		return ondemand.Message{}, err
	}
	m, err := c.Receive()
	if err != nil {
		return m, err
	}
	if m.Type != typ {
		return m, fmt.Errorf("sent %q, the reply is %q", typ, m.Type)
	}
	return m, nil
}

// Register sends a registration for gpu and returns the daemon's answer:
// the number of the job's processes on that GPU, -1 when refused.
func (c *Client) Register(gpu int32) (int32, error) {
	m, err := c.roundTrip(ondemand.TypeContext, ondemand.EncodeContext(ondemand.Context{GPU: gpu, PID: c.PID, JobID: c.JobID}))
	if err != nil {
		return 0, err
	}
	if len(m.Payload) != 4 {
		return 0, fmt.Errorf("registration reply of %d bytes", len(m.Payload))
	}
	return int32(uint32(m.Payload[0]) | uint32(m.Payload[1])<<8 | uint32(m.Payload[2])<<16 | uint32(m.Payload[3])<<24), nil
}

// Poll asks for an activities config, as libkineto does every 5 s when
// its profiler is idle, and returns it ("" when none is pending).
func (c *Client) Poll() (string, error) {
	pids := append([]int32{c.PID}, c.Ancestors...)
	m, err := c.roundTrip(ondemand.TypeRequest, ondemand.EncodePoll(ondemand.Poll{ConfigType: ondemand.ConfigActivities, JobID: c.JobID, PIDs: pids}))
	if err != nil {
		return "", err
	}
	return string(m.Payload), nil
}

// Trace writes the trace a config asks for, where libkineto would, and
// returns its path: ProfilerStep#N slices for ACTIVITIES_ITERATIONS steps
// from PROFILE_START_ITERATION_ROUNDUP (or one step for a duration
// capture), with no distributedInfo, as on-demand traces come.
func (c *Client) Trace(config string) (string, error) {
	kv, err := ondemand.ParseKinetoConfig(config)
	if err != nil {
		return "", err
	}
	logFile := kv["ACTIVITIES_LOG_FILE"]
	if logFile == "" {
		return "", errors.New("config without ACTIVITIES_LOG_FILE")
	}
	steps, start := 1, 1
	if s := kv["ACTIVITIES_ITERATIONS"]; s != "" {
		if steps, err = strconv.Atoi(s); err != nil || steps < 1 {
			return "", fmt.Errorf("ACTIVITIES_ITERATIONS=%q", s)
		}
	}
	if s := kv["PROFILE_START_ITERATION_ROUNDUP"]; s != "" {
		if start, err = strconv.Atoi(s); err != nil || start < 1 {
			return "", fmt.Errorf("PROFILE_START_ITERATION_ROUNDUP=%q", s)
		}
	}
	type event struct {
		Ph   string         `json:"ph"`
		Cat  string         `json:"cat"`
		Name string         `json:"name"`
		PID  int32          `json:"pid"`
		TID  int32          `json:"tid"`
		TS   float64        `json:"ts"`
		Dur  float64        `json:"dur"`
		Args map[string]any `json:"args,omitempty"`
	}
	trace := struct {
		SchemaVersion int     `json:"schemaVersion"`
		TraceID       string  `json:"trace_id,omitempty"`
		TraceEvents   []event `json:"traceEvents"`
	}{SchemaVersion: 1, TraceID: kv["REQUEST_TRACE_ID"]}
	base := float64(time.Now().UnixMicro())
	for i := range steps {
		ts := base + float64(i)*1000
		trace.TraceEvents = append(trace.TraceEvents,
			event{Ph: "X", Cat: "user_annotation", Name: "ProfilerStep#" + strconv.Itoa(start+i), PID: c.PID, TID: c.PID, TS: ts, Dur: 900},
			event{Ph: "X", Cat: "cpu_op", Name: "aten::mm", PID: c.PID, TID: c.PID, TS: ts + 10, Dur: 500})
	}
	b, err := json.Marshal(trace)
	if err != nil {
		return "", err
	}
	path := ondemand.TracePath(logFile, int(c.PID))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

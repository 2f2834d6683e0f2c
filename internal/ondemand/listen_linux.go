//go:build linux

package ondemand

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Address is where a process sends to reach name: the abstract socket
// "\x00name\x00" (libkineto's endpoint counts the trailing NUL in the
// address length, so Go's "@name" alone would be another socket), or the
// file dir/name when dir is set (KINETO_IPC_SOCKET_DIR).
func Address(name, dir string) string {
	if dir != "" {
		return filepath.Join(dir, name)
	}
	return "@" + name + "\x00"
}

// replyAddr is where a sender seen as from answers: an abstract name as
// far as its first NUL, NUL-terminated again (as dynolog answers), or a
// socket file as is.
func replyAddr(from *net.UnixAddr) *net.UnixAddr {
	if name, ok := strings.CutPrefix(from.Name, "@"); ok {
		return &net.UnixAddr{Net: "unixgram", Name: "@" + name + "\x00"}
	}
	return &net.UnixAddr{Net: "unixgram", Name: from.Name}
}

// Listen binds the daemon's socket; Serve then answers on it. It fails
// when another daemon (dynolog, another agent) holds the name.
func (d *Daemon) Listen() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn != nil {
		return errors.New("ondemand: already listening")
	}
	addr := Address(d.cfg.Name, d.cfg.SocketDir)
	if d.cfg.SocketDir != "" {
		if fi, err := os.Lstat(addr); err == nil && fi.Mode()&os.ModeSocket != 0 {
			os.Remove(addr) // a stale socket of ours or dynolog's, as dynolog does
		}
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Net: "unixgram", Name: addr})
	if err != nil {
		return fmt.Errorf("ondemand: bind %q (is dynolog or another agent running?): %w", strings.TrimSuffix(addr, "\x00"), err)
	}
	if d.cfg.SocketDir != "" {
		mode := os.FileMode(0o600)
		if len(d.cfg.AllowUIDs) > 0 {
			mode = 0o666 // other users' processes must be able to send; credentials still decide
		}
		if err := os.Chmod(addr, mode); err != nil {
			conn.Close()
			return fmt.Errorf("ondemand: %w", err)
		}
	}
	raw, err := conn.SyscallConn()
	if err == nil {
		cerr := raw.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1)
		})
		if cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		conn.Close()
		return fmt.Errorf("ondemand: SO_PASSCRED: %w", err)
	}
	d.conn = conn
	return nil
}

// Serve answers datagrams until ctx ends, then closes the socket. Listen
// must have succeeded.
func (d *Daemon) Serve(ctx context.Context) error {
	d.mu.Lock()
	conn := d.conn
	d.mu.Unlock()
	if conn == nil {
		return errors.New("ondemand: Serve before Listen")
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	if d.cfg.SocketDir != "" {
		defer os.Remove(Address(d.cfg.Name, d.cfg.SocketDir))
	}
	buf := make([]byte, MaxDatagram+1)
	oob := make([]byte, syscall.CmsgSpace(syscall.SizeofUcred))
	for {
		n, oobn, flags, from, err := conn.ReadMsgUnix(buf, oob)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("ondemand: read: %w", err)
		}
		if flags&syscall.MSG_TRUNC != 0 || n > MaxDatagram {
			d.Handle(buf[:MaxDatagram+1], Peer{}) // counted and dropped as too long
			continue
		}
		peer := credentials(oob[:oobn])
		reply := d.Handle(buf[:n], peer)
		if reply == nil || from == nil || from.Name == "" {
			continue
		}
		conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		if _, _, err := conn.WriteMsgUnix(reply, nil, replyAddr(from)); err != nil {
			d.cfg.Logf("ondemand: reply to %q: %v", strings.TrimSuffix(from.Name, "\x00"), err)
		}
	}
}

// credentials reads SCM_CREDENTIALS from a datagram's control data.
func credentials(oob []byte) Peer {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return Peer{}
	}
	for i := range msgs {
		if c, err := syscall.ParseUnixCredentials(&msgs[i]); err == nil {
			return Peer{Cred: true, HostPID: int(c.Pid), UID: int(c.Uid)}
		}
	}
	return Peer{}
}

type socket = *net.UnixConn

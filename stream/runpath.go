package stream

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// RunPathToken names run in file and folder names: serve's report files
// (DATA_DIR/reports/<token>.md), the archive's partitions
// (<table>/day=.../run=<token>/) and a staged store's folders
// (<table>/run=<token>/). Unlike RunToken, a NATS subject token that turns
// every other character into '_' (so that x/y, x_y and x.y share one),
// it is injective: letters, digits, '-' and '_' stay as they are and every
// other byte becomes %XX (upper-case hex), '%' included, which is Hive's
// own escaping of partition values (Hive, Spark and Trino read run=x%2Fy
// as the value x/y). An id made of those characters alone keeps the name
// RunToken gave it before, so archives and reports written before keep
// their paths. '.' is escaped too: no token is "." or "..", ends in a dot
// (which Windows drops) or holds "..".
//
// A token longer than MaxRunPathBytes (a run id of many escaped bytes) is
// cut and ends in '~' and 16 hex digits of the id's SHA-256: '~' appears
// in no other token (it is escaped as %7E), so a cut token never equals an
// uncut one; two cut tokens are equal only when the ids share their first
// ~100 bytes and 64 bits of hash, which the archive checks against the
// run_id in the files before it replaces any (archive.WriteRun). The empty
// id, which CheckRunID refuses but a store could hold, is "~".
func RunPathToken(run string) string {
	if run == "" {
		return "~"
	}
	tok := run
	if i := strings.IndexFunc(run, func(r rune) bool { return r >= 0x80 || !pathSafe(byte(r)) }); i >= 0 {
		b := make([]byte, 0, len(run)+16)
		b = append(b, run[:i]...)
		for ; i < len(run); i++ {
			if c := run[i]; pathSafe(c) {
				b = append(b, c)
			} else {
				b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
			}
		}
		tok = string(b)
	}
	if len(tok) <= MaxRunPathBytes {
		return tok
	}
	cut := MaxRunPathBytes - 20
	// not inside an escape
	if i := strings.LastIndexByte(tok[:cut], '%'); i >= 0 && i > cut-3 {
		cut = i
	}
	sum := sha256.Sum256([]byte(run))
	return tok[:cut] + "~" + hex.EncodeToString(sum[:8])
}

// MaxRunPathBytes bounds a RunPathToken: with a report's extension, or
// "run=", it is well inside the 255 bytes most file systems allow a name.
const MaxRunPathBytes = 120

const hexDigits = "0123456789ABCDEF"

func pathSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// ParseRunPathToken is the run id a RunPathToken names, for a reader of
// the archive's run=<token> folders (the run_id column inside the files is
// the same id, and what trainscope itself reads). ok is false for a token
// RunPathToken does not make, and for a cut one (it ends in '~' and a
// hash), whose id is only in its files.
func ParseRunPathToken(tok string) (run string, ok bool) {
	if tok == "" || strings.IndexByte(tok, '~') >= 0 {
		return "", false
	}
	var b []byte
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case pathSafe(c):
			b = append(b, c)
		case c == '%' && i+2 < len(tok) && upperHex(tok[i+1]) && upperHex(tok[i+2]):
			v := unhex(tok[i+1])<<4 | unhex(tok[i+2])
			if pathSafe(v) {
				return "", false // RunPathToken leaves it as it is
			}
			b = append(b, v)
			i += 2
		default:
			return "", false
		}
	}
	return string(b), true
}

func upperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'A' + 10
}

// RunToken is the run's token in its NATS subjects
// (trainscope.<cluster>.<run>.<host>.<table>): every character but
// letters, digits, '-' and '_' becomes '_', and "" becomes "_". The
// transport makes every subject token so. It is here, in the model, for
// the readers of what the transport stored: the store finds folders named
// by it before RunPathToken, the live detectors a run's rejected batches,
// neither of which needs the transport for that.
func RunToken(run string) string {
	if run == "" {
		return "_"
	}
	b := []byte(run)
	for i, c := range b {
		if !pathSafe(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

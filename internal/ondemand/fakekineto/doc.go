// Package fakekineto is a stand-in for libkineto's daemon client, for
// tests: it binds its own abstract endpoint ("dynoconfigclient" and a
// random id, as libkineto names it), registers with the daemon ("ctxt"),
// polls for an on-demand config ("req", its pid and its ancestors') and,
// handed one, writes a small Kineto trace where libkineto would
// (ondemand.TracePath of the config's ACTIVITIES_LOG_FILE and its pid).
// It speaks ondemand's codec, so it checks the daemon against the
// protocol as this module reads it; the protocol's sources are listed in
// internal/ondemand's doc.go. Linux only, like the socket.
//
// Only tests import it (it is not in the binary): internal/ondemand's
// own, and the agent's once the daemon is wired there.
package fakekineto

// Package timeline builds what every detector would otherwise derive again
// from a rank's slices: the step-time account (stream.AccountRow), computed
// once per trace by trace.Derive, for kineto and nsys traces alike.
//
// The account splits each step's window on the GPU timeline into compute,
// exposed communication, exposed copies and GPU idle, and attributes each
// idle instant to what the thread that launches the GPU's next work was
// doing meanwhile: blocked in a call that waited for the GPU (sync), in
// the data loader (input), in host work that launches nothing (host), in
// launch calls and the operators that make them (launch), or in no
// recorded event (unrecorded). Holistic Trace Analysis splits idle time by
// what the GPU's stream waited on (host, kernel, other); this goes one step
// further and names the host operator, Python frame or call, with its
// stack.
package timeline

package detectors

import "slices"

// host_stack_time (sql/schema/040_views.sql: per rank, thread, operator
// and call stack, the sums host_op_time and host_exposed need) is a shared
// view: the pass computes it once, before host_op_time, which then sums
// its 1.4K rows rather than scanning the window's host slices again, as
// host_exposed did twice (once for its launching threads). syn8, CPU time
// (best of 7, a loaded 2-core machine): host_op_time 150 ms and
// host_exposed 300 ms before; host_stack_time 210 ms, host_op_time 4 ms
// and host_exposed 50 ms after. TestHostStackTimeFeedsHostOpTime holds
// host_op_time to the rows it had.
func init() {
	i := slices.Index(sharedViews, "host_op_time")
	if i < 0 {
		i = len(sharedViews) // never: host_op_time is shared
	}
	sharedViews = slices.Insert(sharedViews, i, "host_stack_time")
}

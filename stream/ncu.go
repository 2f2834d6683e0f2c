package stream

import "github.com/apache/arrow-go/v18/arrow"

// KernelMetricsSchema is the schema of the kernel_metrics table: what
// Nsight Compute measured of profiled kernel launches (ingest/ncu), one
// row per launch and metric (or rule hint). The DuckDB DDL is
// sql/schema/080_kernel_metrics.sql, with the same columns in the same
// order.
var KernelMetricsSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", str, false),
	field("rank", i32, true),    // from the file name (rank-3...), else null
	field("host", str, true),    // the export's Host Name
	field("source", str, false), // the export's file name
	field("launch", i64, false), // ncu's ID of the launch in that export
	field("kernel", str, false),
	field("device", i32, true),
	field("cc", str, true),
	field("grid_x", i32, true),
	field("grid_y", i32, true),
	field("grid_z", i32, true),
	field("block_x", i32, true),
	field("block_y", i32, true),
	field("block_z", i32, true),
	field("stream", i64, true),
	field("section", str, true),
	field("metric", str, false), // ncu's metric name, or rule:<name> for a rule hint
	field("unit", str, true),    // byte, ns, hz, byte/s, %, cycle ... (normalised)
	field("value", f64, true),
	field("text", str, true), // a value that is not a number, or a rule's type and hint
}, nil)

package stream

import "github.com/apache/arrow-go/v18/arrow"

// Launch-script tables: the flags a launch script passes (one row per
// occurrence, with its file, line, branch and comment) and the context
// derived from them (one row per script). ingest/script builds both; the
// DuckDB DDL is sql/schema/060_script.sql, with the same columns in the
// same order.

// ScriptFlagsSchema is the schema of the script_flags table.
var ScriptFlagsSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", str, false),
	field("script", str, false),          // the script's path as given
	field("file", str, false),            // the file the line is in: the script or a sourced file
	field("line", i32, false),            // 1-based
	field("array", str, true),            // the bash array the flag came from
	field("command", str, true),          // the launch command it belongs to; "env" for variables
	field("branch", str, true),           // the condition text; null when unconditional
	field("branch_taken", boolean, true), // null when unknown
	field("flag", str, false),            // --name, a dotted Hydra key, or a variable name
	field("value", str, true),            // after expansion; null for a boolean switch
	field("raw", str, false),             // the text before expansion
	field("comment", str, true),          // the attached comment, # NOTE(...) included
	field("seq", i32, false),             // order of occurrence (argparse: the last one wins)
}, nil)

// ScriptContextSchema is the schema of the script_context table. Nulls are
// unknown; derived lists the fields not read straight from a flag and how
// they were obtained.
var ScriptContextSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", str, false),
	field("script", str, false),
	field("framework", str, false), // relax, slime, megatron, verl, unknown
	field("model", str, true),
	field("model_size", str, true), // as named: 35B-A3B
	field("dense_or_moe", str, true),
	field("modality", str, true), // text, image, video, omni, multimodal
	field("gpus", i64, true),
	field("nodes", i64, true),
	field("gpus_per_node", i64, true),
	field("mode", str, true), // colocate, fully-async, hybrid, sync, async, sft
	field("tp", i64, true),
	field("pp", i64, true),
	field("vpp", i64, true),
	field("cp", i64, true),
	field("ep", i64, true),
	field("etp", i64, true),
	field("dp", i64, true),
	field("micro_batch", i64, true),
	field("global_batch", i64, true),
	field("seq_len", i64, true),
	field("max_prompt_len", i64, true),
	field("max_response_len", i64, true),
	field("layers", i64, true),
	field("hidden", i64, true),
	field("ffn_hidden", i64, true),
	field("heads", i64, true),
	field("kv_heads", i64, true),
	field("experts", i64, true),
	field("moe_topk", i64, true),
	field("vocab", i64, true),
	field("params_b", f64, true),
	field("active_params_b", f64, true),
	field("recompute", str, true),
	field("offload", str, true),
	field("precision", str, true),
	field("gpu", str, true),
	field("problems", arrow.ListOf(str), true),
	field("derived", arrow.ListOf(str), true),
	field("rollout_tp", i64, true),
	field("max_tokens_per_gpu", i64, true),
}, nil)

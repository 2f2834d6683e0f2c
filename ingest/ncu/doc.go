// Package ncu reads Nsight Compute's CSV exports (ncu --csv --page details
// and --page raw) into per-launch metrics: speed of light of compute and
// memory, DRAM throughput and bytes, occupancy and what limits it, launch
// statistics and ncu's own rule hints. It knows both the current layout
// (sections such as "GPU Speed Of Light Throughput", rule and estimated
// speedup columns) and the older one (a "Kernel Time" column, raw
// throughput metrics in place of the Speed-of-Light section), and the
// traps real exports carry: metric rows shorter than the header,
// thousands separators, mixed units and "n/a" values. Values are
// normalised to bytes, nanoseconds, hertz and bytes per second.
package ncu

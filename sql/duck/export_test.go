package duck

// Appends is how many inserts DuckDB's appender took (see appendRecords).
func Appends() int64 { return appends.Load() }

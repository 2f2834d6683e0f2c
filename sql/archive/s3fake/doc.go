// Package s3fake is an in-memory S3-compatible server for tests on
// machines with no MinIO: path-style PUT (plain or aws-chunked), GET,
// HEAD and DELETE of objects, and ListObjectsV2 without paging. It does
// not check signatures.
package s3fake

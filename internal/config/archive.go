package config

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/trainscope/trainscope/sql/archive"
)

// ArchiveTarget is where this process writes the archive (serve.archive):
// the folder itself, or for an s3:// archive a staging folder under
// dataDir whose files upload then copies to the bucket. An ingestor and
// 'analyze --archive' write through it.
func (c *Config) ArchiveTarget(dataDir string) (dir string, upload func(context.Context, string, archive.Written) error, err error) {
	loc := c.Serve.Archive
	if !archive.IsRemote(loc) {
		return loc, nil, nil
	}
	r, err := archive.NewRemote(loc, c.ArchiveS3())
	if err != nil {
		return "", nil, &Error{Err: fmt.Errorf("serve.archive: %w", err)}
	}
	return filepath.Join(dataDir, "archive-staging"), r.Upload, nil
}

// ArchiveS3 is how an s3:// archive is reached (serve.archive_s3).
func (c *Config) ArchiveS3() archive.S3Options {
	o := c.Serve.ArchiveS3
	return archive.S3Options{Endpoint: o.Endpoint, Region: o.Region, Insecure: o.Insecure, AccessKey: o.AccessKey, SecretKey: o.SecretKey}
}

package archive

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Options say how to reach an S3-compatible store (AWS S3, MinIO, Ceph
// RGW, GCS's interoperability API).
type S3Options struct {
	Endpoint string // host[:port]; default s3.amazonaws.com
	Region   string // default us-east-1
	Insecure bool   // plain HTTP (a MinIO inside the cluster)
	// AccessKey and SecretKey; when empty, AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY (or MINIO_ROOT_USER / MINIO_ROOT_PASSWORD).
	AccessKey, SecretKey string
}

// IsRemote says whether an archive location is an object store URL
// (s3://bucket/prefix) rather than a folder.
func IsRemote(location string) bool { return strings.HasPrefix(location, "s3://") }

// Remote is an archive in an S3-compatible bucket. Ingestors write a run
// to a local folder and Upload it; a query node Mirrors the bucket into a
// local folder and attaches that, since the DuckDB here reads local files
// only (its httpfs extension is not bundled).
type Remote struct {
	client         *minio.Client
	Bucket, Prefix string
}

// NewRemote connects to the archive at location (s3://bucket/prefix).
func NewRemote(location string, opt S3Options) (*Remote, error) {
	u, err := url.Parse(location)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, fmt.Errorf("archive %q: want s3://bucket/prefix", location)
	}
	endpoint := opt.Endpoint
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	region := opt.Region
	if region == "" {
		region = "us-east-1"
	}
	creds := credentials.NewStaticV4(opt.AccessKey, opt.SecretKey, "")
	if opt.AccessKey == "" {
		creds = credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.EnvMinio{}})
	}
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: !opt.Insecure, Region: region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", location, err)
	}
	return &Remote{client: c, Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}, nil
}

func (r *Remote) key(rel string) string {
	if r.Prefix == "" {
		return rel
	}
	return r.Prefix + "/" + rel
}

func (r *Remote) String() string { return "s3://" + path.Join(r.Bucket, r.Prefix) }

// Upload copies what WriteRun wrote under dir to the bucket and removes
// the objects of the folders it removed.
func (r *Remote) Upload(ctx context.Context, dir string, w Written) error {
	for _, p := range w.Paths {
		if _, err := r.client.FPutObject(ctx, r.Bucket, r.key(p), filepath.Join(dir, filepath.FromSlash(p)),
			minio.PutObjectOptions{ContentType: "application/vnd.apache.parquet"}); err != nil {
			return fmt.Errorf("archive upload %s/%s: %w", r, p, err)
		}
	}
	for _, d := range w.Removed {
		for obj := range r.client.ListObjects(ctx, r.Bucket, minio.ListObjectsOptions{Prefix: r.key(d) + "/", Recursive: true}) {
			if obj.Err != nil {
				return fmt.Errorf("archive list %s/%s: %w", r, d, obj.Err)
			}
			if err := r.client.RemoveObject(ctx, r.Bucket, obj.Key, minio.RemoveObjectOptions{}); err != nil {
				return fmt.Errorf("archive remove %s: %w", obj.Key, err)
			}
		}
	}
	return nil
}

// Mirror makes dir hold the bucket's archive files: it downloads the
// objects that are new or changed (by size and ETag) and removes local
// files whose object is gone. Downloads land beside their name and are
// renamed into place, so a query never reads half a file.
func (r *Remote) Mirror(ctx context.Context, dir string) (fetched, removed int, err error) {
	seen := map[string]bool{}
	prefix := ""
	if r.Prefix != "" {
		prefix = r.Prefix + "/"
	}
	for obj := range r.client.ListObjects(ctx, r.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return fetched, removed, fmt.Errorf("archive list %s: %w", r, obj.Err)
		}
		rel := strings.TrimPrefix(obj.Key, prefix)
		if !strings.HasSuffix(rel, ".parquet") || strings.Contains(rel, "..") {
			continue
		}
		seen[rel] = true
		local := filepath.Join(dir, filepath.FromSlash(rel))
		tag := local + ".etag"
		if fi, err := os.Stat(local); err == nil && fi.Size() == obj.Size {
			if old, err := os.ReadFile(tag); err == nil && string(old) == obj.ETag {
				continue
			}
		}
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return fetched, removed, err
		}
		tmp := local + ".tmp"
		if err := r.client.FGetObject(ctx, r.Bucket, obj.Key, tmp, minio.GetObjectOptions{}); err != nil {
			os.Remove(tmp)
			return fetched, removed, fmt.Errorf("archive download %s: %w", obj.Key, err)
		}
		if err := os.Rename(tmp, local); err != nil {
			return fetched, removed, err
		}
		if err := os.WriteFile(tag, []byte(obj.ETag), 0o644); err != nil {
			return fetched, removed, err
		}
		fetched++
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		if !seen[rel(dir, p)] {
			removed++
			os.Remove(p + ".etag")
			return os.Remove(p)
		}
		return nil
	})
	return fetched, removed, err
}

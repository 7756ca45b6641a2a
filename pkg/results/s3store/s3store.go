// Package s3store keeps urlcheck's result files (results.jsonl, results.csv,
// summary.json; see package results) as objects in one Amazon S3 bucket, and
// hands out presigned URLs so that clients can upload inputs and download
// results without AWS credentials. The serverless pipeline uses it against
// S3; the local pipeline and the integration tests use it against the local
// versitygw server.
//
// # Endpoints and addressing
//
// NewClient sets the client's BaseEndpoint from configuration, so the same
// code runs on AWS and on a local server. When an endpoint is given it also
// switches the client to path-style addressing (http://host/bucket/key):
// local servers such as versitygw are reached by IP address over plain HTTP
// and cannot serve virtual-hosted-style names (http://bucket.host/key). On
// AWS (no endpoint) the default virtual-hosted style is kept.
//
// # Errors
//
// Every error is wrapped with the operation, the bucket and, where there is
// one, the key; the SDK's error stays in the chain, so errors.As to the types
// of service/s3/types still works. Get of a key that does not exist returns
// an error wrapping ErrNotFound.
package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/urlcheck/urlcheck/pkg/awsconfig"
)

// ErrNotFound is wrapped by the error Get returns when the key does not exist
// in the bucket.
var ErrNotFound = errors.New("s3store: object not found")

// ErrInvalidArgument is wrapped by the errors returned, before any request,
// for an empty key or an out-of-range presign TTL.
var ErrInvalidArgument = errors.New("s3store: invalid argument")

// Bounds of the ttl of PresignGet and PresignPut. SigV4 presigned URLs are
// valid for whole seconds, at most seven days.
const (
	MinPresignTTL = time.Second
	MaxPresignTTL = 7 * 24 * time.Hour
)

// Store reads and writes the objects of one S3 bucket. It is safe for
// concurrent use (as is the client).
type Store struct {
	client   *s3.Client
	presign  *s3.PresignClient
	bucket   string
	pageSize int32 // MaxKeys of each ListObjectsV2 request; 0: the server's default (1000)
}

// New returns a Store over bucket, which must already exist (see
// CreateBucket).
func New(client *s3.Client, bucket string) *Store {
	return &Store{client: client, presign: s3.NewPresignClient(client), bucket: bucket}
}

// WithListPageSize returns a copy of s whose List asks for at most n keys per
// ListObjectsV2 request (MaxKeys); n <= 0 restores the server's default and
// n above 1000 is capped at 1000 (S3's own cap). It changes only the number
// of requests, never List's result.
func (s *Store) WithListPageSize(n int) *Store {
	c := *s
	c.pageSize = int32(max(0, min(n, 1000)))
	return &c
}

// Bucket returns the bucket name s was created with.
func (s *Store) Bucket() string { return s.bucket }

// NewClient returns an S3 client built from the default AWS configuration
// (environment, shared config files, instance/task roles). endpoint, when not
// empty, overrides the service endpoint (BaseEndpoint, e.g.
// "http://127.0.0.1:7070" for versitygw) and turns on path-style addressing
// (UsePathStyle), which local servers need (see the package documentation);
// region, when not empty, overrides the configured region. It returns an
// error if the default configuration cannot be loaded.
// Extra load options (SDK middleware, for instance) go to awsconfig.Load.
func NewClient(ctx context.Context, endpoint, region string, extra ...func(*config.LoadOptions) error) (*s3.Client, error) {
	cfg, err := awsconfig.Load(ctx, region, extra...)
	if err != nil {
		return nil, fmt.Errorf("s3store: %w", err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
	}), nil
}

// CreateBucket creates bucket in the client's region (with a
// LocationConstraint outside us-east-1, as S3 requires). A bucket that
// already exists and belongs to the caller (BucketAlreadyOwnedByYou) is not
// an error. Meant for tests and the local pipeline; production buckets come
// from the deployment template. Errors are wrapped with the bucket name.
func CreateBucket(ctx context.Context, client *s3.Client, bucket string) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if r := client.Options().Region; r != "" && r != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(r),
		}
	}
	_, err := client.CreateBucket(ctx, in)
	if err != nil && !isAPIError[*types.BucketAlreadyOwnedByYou](err, "BucketAlreadyOwnedByYou") {
		return fmt.Errorf("s3store: creating bucket %q: %w", bucket, err)
	}
	return nil
}

// Put stores body under key with one PutObject request, replacing any object
// already there. body must be seekable (the SDK reads it to sign and
// checksum the request, then rewinds it; over plain HTTP it cannot stream an
// unseekable body); nil stores an empty object. contentType, when not empty,
// becomes the object's Content-Type. Errors wrap ErrInvalidArgument (empty
// key) or the SDK's error.
func (s *Store) Put(ctx context.Context, key string, body io.ReadSeeker, contentType string) error {
	if err := checkKey("put", key); err != nil {
		return err
	}
	in := &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), Body: body}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	if _, err := s.client.PutObject(ctx, in); err != nil {
		return fmt.Errorf("s3store: put s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// Get returns the content of the object under key with one GetObject
// request; the caller must close it. A missing key yields an error wrapping
// ErrNotFound (and the SDK's *types.NoSuchKey). Other errors wrap
// ErrInvalidArgument (empty key) or the SDK's error.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey("get", key); err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("s3store: get s3://%s/%s: %w: %w", s.bucket, key, ErrNotFound, err)
		}
		return nil, fmt.Errorf("s3store: get s3://%s/%s: %w", s.bucket, key, err)
	}
	return out.Body, nil
}

// PresignGet returns a URL through which anyone can download the object under
// key with a plain HTTP GET, for ttl (MinPresignTTL..MaxPresignTTL, whole
// seconds; the URL also stops working when the credentials that signed it
// expire, which for temporary credentials may be sooner). It makes no
// request: the object need not exist yet. Errors wrap ErrInvalidArgument
// (empty key, ttl out of range) or the SDK's signing error.
func (s *Store) PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := checkKey("presign get", key); err != nil {
		return "", err
	}
	if err := checkTTL("presign get", ttl); err != nil {
		return "", err
	}
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)},
		s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("s3store: presign get s3://%s/%s: %w", s.bucket, key, err)
	}
	return req.URL, nil
}

// PresignPut returns a URL through which anyone can upload the object under
// key with a plain HTTP PUT of the whole body, for ttl (as for PresignGet).
// contentType, when not empty, is signed into the URL: the upload must then
// send exactly that Content-Type header, or S3 rejects the signature (403);
// it becomes the object's Content-Type. It makes no request. Errors wrap
// ErrInvalidArgument (empty key, ttl out of range) or the SDK's signing
// error.
func (s *Store) PresignPut(ctx context.Context, key, contentType string, ttl time.Duration) (string, error) {
	if err := checkKey("presign put", key); err != nil {
		return "", err
	}
	if err := checkTTL("presign put", ttl); err != nil {
		return "", err
	}
	in := &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	req, err := s.presign.PresignPutObject(ctx, in, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("s3store: presign put s3://%s/%s: %w", s.bucket, key, err)
	}
	return req.URL, nil
}

// List returns the keys of every object whose key starts with prefix (all
// objects when prefix is empty), in S3's order (ascending UTF-8 bytes),
// following ListObjectsV2 continuation tokens until the last page. It
// returns an empty, non-nil slice when there are none. A failed request
// returns nil and the error, wrapped with the bucket and prefix and the
// number of keys listed so far.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	if s.pageSize > 0 {
		in.MaxKeys = aws.Int32(s.pageSize)
	}
	keys := []string{}
	p := s3.NewListObjectsV2Paginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3store: list s3://%s/%s (after %d keys): %w", s.bucket, prefix, len(keys), err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// checkKey rejects an empty key, which S3 would read as the bucket itself.
func checkKey(op, key string) error {
	if key == "" {
		return fmt.Errorf("s3store: %s: empty key: %w", op, ErrInvalidArgument)
	}
	return nil
}

// checkTTL rejects a presign ttl outside MinPresignTTL..MaxPresignTTL: SigV4
// counts X-Amz-Expires in whole seconds (so under a second would be 0) and
// allows at most seven days.
func checkTTL(op string, ttl time.Duration) error {
	if ttl < MinPresignTTL || ttl > MaxPresignTTL {
		return fmt.Errorf("s3store: %s: ttl %v, want %v..%v: %w", op, ttl, MinPresignTTL, MaxPresignTTL, ErrInvalidArgument)
	}
	return nil
}

// isNotFound reports whether err says the object does not exist: the modelled
// *types.NoSuchKey (GetObject) or *types.NotFound (HeadObject, which has no
// error body), or an API error with one of those codes from a server whose
// errors the SDK does not map to the modelled types.
func isNotFound(err error) bool {
	return isAPIError[*types.NoSuchKey](err, "NoSuchKey") || isAPIError[*types.NotFound](err, "NotFound")
}

// isAPIError reports whether err is, or wraps, an error of type T or a
// smithy.APIError whose code is code.
func isAPIError[T error](err error, code string) bool {
	var t T
	if errors.As(err, &t) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}

package s3store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// ---------------------------------------------------------------- no server

func TestCheckKeyAndTTL(t *testing.T) {
	if err := checkKey("op", ""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("checkKey(\"\") = %v, want ErrInvalidArgument", err)
	}
	if err := checkKey("op", "a/b.jsonl"); err != nil {
		t.Errorf("checkKey(a/b.jsonl) = %v", err)
	}
	for _, tc := range []struct {
		ttl time.Duration
		ok  bool
	}{
		{-time.Second, false}, {0, false}, {999 * time.Millisecond, false},
		{time.Second, true}, {15 * time.Minute, true}, {MaxPresignTTL, true},
		{MaxPresignTTL + time.Second, false},
	} {
		err := checkTTL("op", tc.ttl)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidArgument)) {
			t.Errorf("checkTTL(%v) = %v, want ok=%v", tc.ttl, err, tc.ok)
		}
	}
}

func TestIsNotFound(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"NoSuchKey type", &types.NoSuchKey{}, true},
		{"NotFound type", fmt.Errorf("wrapped: %w", &types.NotFound{}), true},
		{"generic NoSuchKey code", &smithy.GenericAPIError{Code: "NoSuchKey"}, true},
		{"NoSuchBucket", &types.NoSuchBucket{}, false},
		{"AccessDenied", &smithy.GenericAPIError{Code: "AccessDenied"}, false},
		{"plain", errors.New("NoSuchKey"), false},
	}
	for _, tc := range tests {
		if got := isNotFound(tc.err); got != tc.want {
			t.Errorf("%s: isNotFound = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestWithListPageSize(t *testing.T) {
	s := New(s3.New(s3.Options{Region: "us-east-1"}), "b")
	for _, tc := range []struct {
		n    int
		want int32
	}{{-1, 0}, {0, 0}, {2, 2}, {1000, 1000}, {5000, 1000}} {
		if got := s.WithListPageSize(tc.n).pageSize; got != tc.want {
			t.Errorf("WithListPageSize(%d).pageSize = %d, want %d", tc.n, got, tc.want)
		}
	}
	if s.pageSize != 0 {
		t.Errorf("WithListPageSize changed the original Store")
	}
}

func TestNewClientOptions(t *testing.T) {
	ctx := context.Background()
	c, err := NewClient(ctx, "http://127.0.0.1:1", "eu-west-3")
	if err != nil {
		t.Fatal(err)
	}
	o := c.Options()
	if aws.ToString(o.BaseEndpoint) != "http://127.0.0.1:1" || !o.UsePathStyle || o.Region != "eu-west-3" {
		t.Errorf("with endpoint: BaseEndpoint %q UsePathStyle %v Region %q", aws.ToString(o.BaseEndpoint), o.UsePathStyle, o.Region)
	}
	c, err = NewClient(ctx, "", "eu-west-3")
	if err != nil {
		t.Fatal(err)
	}
	if o := c.Options(); o.BaseEndpoint != nil || o.UsePathStyle {
		t.Errorf("without endpoint: BaseEndpoint %v UsePathStyle %v, want nil and false", o.BaseEndpoint, o.UsePathStyle)
	}
}

// TestPresignOffline signs URLs without a server: path-style, expiry in whole
// seconds, signed content type.
func TestPresignOffline(t *testing.T) {
	ctx := context.Background()
	c := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://127.0.0.1:1"),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
	})
	s := New(c, "bkt")
	get, err := s.PresignGet(ctx, "runs/1/results.csv", 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(get)
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != "127.0.0.1:1" || u.Path != "/bkt/runs/1/results.csv" || u.Query().Get("X-Amz-Expires") != "90" ||
		u.Query().Get("X-Amz-Signature") == "" {
		t.Errorf("PresignGet URL = %s", get)
	}
	put, err := s.PresignPut(ctx, "in/urls.txt", "text/plain", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	u, err = url.Parse(put)
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != "/bkt/in/urls.txt" || u.Query().Get("X-Amz-Expires") != "3600" ||
		!strings.Contains(u.Query().Get("X-Amz-SignedHeaders"), "content-type") {
		t.Errorf("PresignPut URL = %s", put)
	}
	if _, err := s.PresignGet(ctx, "k", 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("PresignGet ttl 0: %v, want ErrInvalidArgument", err)
	}
	if _, err := s.PresignPut(ctx, "", "", time.Minute); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("PresignPut empty key: %v, want ErrInvalidArgument", err)
	}
}

// ------------------------------------------------------------- versitygw

// testStore returns a Store over a fresh bucket on the server at
// URLCHECK_S3_ENDPOINT (skipping the test when it is unset), emptied and
// removed when the test ends.
func testStore(t *testing.T) (*Store, *s3.Client) {
	t.Helper()
	endpoint := os.Getenv("URLCHECK_S3_ENDPOINT")
	if endpoint == "" {
		t.Skip("set URLCHECK_S3_ENDPOINT (make test-aws starts versitygw)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := NewClient(ctx, endpoint, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	bucket := "urlcheck-test-" + hex.EncodeToString(rnd[:])
	if err := CreateBucket(ctx, client, bucket); err != nil {
		t.Fatal(err)
	}
	if err := CreateBucket(ctx, client, bucket); err != nil {
		t.Fatalf("second CreateBucket of the same bucket: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		keys, err := New(client, bucket).List(ctx, "")
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		for _, k := range keys {
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)}); err != nil {
				t.Errorf("cleanup: deleting %s: %v", k, err)
			}
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Errorf("cleanup: deleting bucket %s: %v", bucket, err)
		}
	})
	return New(client, bucket), client
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func readAll(t *testing.T, rc io.ReadCloser) []byte {
	t.Helper()
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPutGetRoundTrip(t *testing.T) {
	s, client := testStore(t)
	ctx := testCtx(t)
	big := make([]byte, 1<<20)
	_, _ = rand.Read(big)
	tests := []struct {
		name, key, contentType string
		body                   []byte
	}{
		{"small text", "runs/r1/summary.json", "application/json", []byte(`{"total":3,"broken":1}` + "\n")},
		{"1 MiB binary", "runs/r1/big.bin", "application/octet-stream", big},
		{"empty", "runs/r1/empty.csv", "", nil},
		{"odd key", "runs/r1/a b+c=ü.jsonl", "application/x-ndjson", []byte("{}\n")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Put(ctx, tc.key, bytes.NewReader(tc.body), tc.contentType); err != nil {
				t.Fatal(err)
			}
			rc, err := s.Get(ctx, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, rc); !bytes.Equal(got, tc.body) {
				t.Fatalf("Get returned %d bytes, want the %d put", len(got), len(tc.body))
			}
			if tc.contentType == "" {
				return
			}
			head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Bucket()), Key: aws.String(tc.key)})
			if err != nil {
				t.Fatal(err)
			}
			if got := aws.ToString(head.ContentType); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
		})
	}
	// Overwrite replaces.
	if err := s.Put(ctx, "runs/r1/summary.json", strings.NewReader("v2"), ""); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Get(ctx, "runs/r1/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(readAll(t, rc)); got != "v2" {
		t.Errorf("after overwrite Get = %q, want v2", got)
	}
}

func TestGetMissing(t *testing.T) {
	s, client := testStore(t)
	ctx := testCtx(t)
	_, err := s.Get(ctx, "no/such/key")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	var nsk *types.NoSuchKey
	if !errors.As(err, &nsk) {
		t.Errorf("Get of a missing key: %v, want *types.NoSuchKey in the chain", err)
	}
	if !strings.Contains(err.Error(), s.Bucket()) || !strings.Contains(err.Error(), "no/such/key") {
		t.Errorf("error %q does not name the bucket and key", err)
	}
	// A missing bucket is not ErrNotFound.
	_, err = New(client, s.Bucket()+"-missing").Get(ctx, "k")
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Get from a missing bucket: %v, want an error other than ErrNotFound", err)
	}
}

func TestListPaginates(t *testing.T) {
	s, client := testStore(t)
	ctx := testCtx(t)
	var want []string
	for i := range 7 {
		k := fmt.Sprintf("runs/a/%02d.jsonl", i)
		want = append(want, k)
		if err := s.Put(ctx, k, strings.NewReader("x"), ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"runs/b/00.jsonl", "runs/ab.jsonl", "other.txt"} {
		if err := s.Put(ctx, k, strings.NewReader("y"), ""); err != nil {
			t.Fatal(err)
		}
	}
	// The server really pages with MaxKeys 2 (so List must follow tokens).
	first, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket()), Prefix: aws.String("runs/a/"), MaxKeys: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Contents) != 2 || !aws.ToBool(first.IsTruncated) {
		t.Fatalf("first page: %d keys, truncated %v; want 2 and true", len(first.Contents), aws.ToBool(first.IsTruncated))
	}
	for _, size := range []int{2, 3, 0} {
		got, err := s.WithListPageSize(size).List(ctx, "runs/a/")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("page size %d: List = %q, want %q", size, got, want)
		}
	}
	all, err := s.WithListPageSize(4).List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 10 {
		t.Errorf("List(\"\") = %d keys %q, want 10", len(all), all)
	}
	none, err := s.List(ctx, "nothing/")
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("List of an empty prefix = %#v, %v; want empty non-nil", none, err)
	}
}

func TestPresignPut(t *testing.T) {
	s, _ := testStore(t)
	ctx := testCtx(t)
	u, err := s.PresignPut(ctx, "uploads/urls.txt", "text/plain", 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	body := "https://example.com/\nhttps://example.org/\n"
	put := func(contentType string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode != http.StatusOK {
			code, _, _ := strings.Cut(string(b), "</Code>")
			_, code, _ = strings.Cut(code, "<Code>")
			t.Logf("PUT with Content-Type %q: %s %s", contentType, resp.Status, code)
		}
		return resp.StatusCode
	}
	if code := put("application/json"); code != http.StatusForbidden {
		t.Errorf("presigned PUT with another Content-Type: status %d, want 403", code)
	}
	if code := put("text/plain"); code != http.StatusOK {
		t.Fatalf("presigned PUT: status %d, want 200", code)
	}
	rc, err := s.Get(ctx, "uploads/urls.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(readAll(t, rc)); got != body {
		t.Errorf("Get after presigned PUT = %q, want %q", got, body)
	}
}

func TestPresignGet(t *testing.T) {
	s, _ := testStore(t)
	ctx := testCtx(t)
	body := "line,url,class\n1,https://example.com/,ok\n"
	if err := s.Put(ctx, "runs/r2/results.csv", strings.NewReader(body), "text/csv"); err != nil {
		t.Fatal(err)
	}
	get := func(key string) (int, string) {
		u, err := s.PresignGet(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, got := get("runs/r2/results.csv"); code != http.StatusOK || got != body {
		t.Errorf("presigned GET: %d %q, want 200 %q", code, got, body)
	}
	if code, _ := get("runs/r2/missing.csv"); code != http.StatusNotFound {
		t.Errorf("presigned GET of a missing key: status %d, want 404", code)
	}
}

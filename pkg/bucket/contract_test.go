package bucket_test

import (
	"testing"

	"github.com/urlcheck/urlcheck/pkg/bucket"
	"github.com/urlcheck/urlcheck/pkg/bucket/buckettest"
)

func TestMemStoreContract(t *testing.T) {
	buckettest.Run(t, func(*testing.T) bucket.Store { return bucket.NewMemStore() }, 16, 200)
}

package jobs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

// The tests that need DynamoDB share one table, made for this run in
// TestMain and deleted after; every test uses its own job IDs.
var (
	testClient *dynamodb.Client
	testTable  string
)

var epoch = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	endpoint := os.Getenv("URLCHECK_DDB_ENDPOINT")
	if endpoint == "" {
		return m.Run() // the server tests skip themselves
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := NewClient(ctx, endpoint, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	table := fmt.Sprintf("urlcheck-jobs-test-%d-%d", time.Now().UnixNano(), rand.Uint32())
	if err := CreateTable(ctx, client, table); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
			fmt.Fprintf(os.Stderr, "deleting table %s: %v\n", table, err)
		}
	}()
	testClient, testTable = client, table
	return m.Run()
}

// testStore returns a Store over the test table with clk (nil: a manual
// clock at epoch), skipping the test when there is no DynamoDB endpoint.
func testStore(t *testing.T, clk clock.Clock) *Store {
	t.Helper()
	if testClient == nil {
		t.Skip("set URLCHECK_DDB_ENDPOINT (make test-aws starts DynamoDB Local)")
	}
	if clk == nil {
		clk = clock.NewManual(epoch)
	}
	return New(testClient, testTable, clk)
}

// jobID returns a job ID unique to this run.
func jobID(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), rand.Uint64())
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

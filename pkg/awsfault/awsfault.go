// Package awsfault makes a chosen share of the AWS API calls of an
// aws-sdk-go-v2 client fail, to test how urlcheck's serverless pipeline
// copes with DynamoDB, SQS and S3 errors.
//
// An Injector is SDK middleware: add it to a client through
// config.WithAPIOptions, for example
//
//	faults := awsfault.New(0.05, 1, "DynamoDB", "SQS", "S3")
//	client, err := dynamostore.NewClient(ctx, endpoint, region, config.WithAPIOptions(faults.APIOptions()))
//
// A failed call returns an error that wraps ErrInjected (errors.Is) and
// looks like an HTTP 500 InternalFailure from the service: errors.As finds a
// smithy.APIError with code "InternalFailure" and fault smithy.FaultServer,
// and an *awshttp.ResponseError whose HTTPStatusCode is 500; and a *Fault
// (errors.As) tells which call failed and how.
//
// Faults come in two kinds. A fault "before" fails the call before it is
// sent: the server sees nothing. A fault "after" (a share AfterShare of the
// faults) sends the call, lets the server apply it, then discards the
// response and returns the error: the nastier case of a write that
// happened while its caller thinks it failed (a lost response).
//
// The injector works at the Initialize step, outside the SDK's retry loop,
// so the SDK does not retry an injected fault: the caller sees every one.
package awsfault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ErrInjected is wrapped by every error an Injector returns.
var ErrInjected = errors.New("awsfault: injected failure")

// ErrorCode is the API error code of injected faults.
const ErrorCode = "InternalFailure"

// Fault is the error an Injector returns for a call it fails. It wraps
// ErrInjected and an *awshttp.ResponseError (HTTP 500) that wraps a
// *smithy.GenericAPIError (code ErrorCode, fault smithy.FaultServer). The
// SDK hands it to the caller inside a *smithy.OperationError.
type Fault struct {
	// Service and Operation name the failed call ("SQS",
	// "SendMessageBatch").
	Service, Operation string
	// After is true when the call was sent and applied by the server before
	// the fault discarded its outcome, false when the call was never sent.
	After bool

	resp *awshttp.ResponseError
}

// Error describes the fault.
func (f *Fault) Error() string {
	when := "before sending"
	if f.After {
		when = "after the server's response"
	}
	return fmt.Sprintf("%v (%s.%s, %s): %v", ErrInjected, f.Service, f.Operation, when, f.resp)
}

// Unwrap returns ErrInjected and the HTTP 500 response error.
func (f *Fault) Unwrap() []error { return []error{ErrInjected, f.resp} }

// Injector fails calls at random. Set its fields before adding it to a
// client (or use New); once calls are under way, change the rate only with
// SetRate. Its methods are safe for concurrent use.
type Injector struct {
	// Rate is the probability, in [0, 1], that a selected call fails; see
	// SetRate.
	Rate float64
	// AfterShare is the share, in [0, 1], of faults injected after the call
	// reached the server and was applied (the rest fail before sending).
	AfterShare float64
	// Services selects the services whose calls may fail, by SDK service ID
	// ("DynamoDB", "SQS", "S3"), case-insensitively; empty selects all.
	Services []string
	// Operations, when not empty, further restricts the faults to these
	// operations, named "PutItem" or "DynamoDB.PutItem".
	Operations []string
	// PerAttempt moves the injector inside the SDK's retry loop (the
	// Finalize step, after the "Retry" middleware): each attempt may fail,
	// with a retryable 500, and the SDK retries it as it would a real
	// transient server error, so that callers see a failure only when
	// every attempt failed. "After" faults then model a lost response whose
	// request the server applied and the SDK sends again (a conditional
	// write that meets its own earlier write, a message sent twice).
	PerAttempt bool
	// Seed seeds the random draws. Calls made one at a time in the same
	// order see the same faults for the same seed; concurrent calls draw in
	// an unpredictable order.
	Seed uint64

	id      string
	once    sync.Once
	rateSet atomic.Bool
	rate    atomic.Uint64 // math.Float64bits of the rate set by SetRate

	mu       sync.Mutex
	rng      *rand.Rand
	injected map[string]int
	after    map[string]int
	seq      int
}

var injectorSeq atomic.Uint64

// New returns an Injector failing calls of the given services (all when
// none is given) with probability rate, with random draws seeded by seed,
// and every fault before sending (AfterShare 0).
func New(rate float64, seed uint64, services ...string) *Injector {
	return &Injector{Rate: rate, Seed: seed, Services: services}
}

func (f *Injector) init() {
	f.once.Do(func() {
		f.id = fmt.Sprintf("awsfault.Injector#%d", injectorSeq.Add(1))
		f.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
		f.injected = map[string]int{}
		f.after = map[string]int{}
	})
}

// SetRate sets the probability that a selected call fails from now on,
// clamped to [0, 1]; 0 turns the injector off. It takes precedence over the
// Rate field and may be called while calls are under way.
func (f *Injector) SetRate(r float64) {
	f.rate.Store(math.Float64bits(clamp(r)))
	f.rateSet.Store(true)
}

func (f *Injector) currentRate() float64 {
	if f.rateSet.Load() {
		return math.Float64frombits(f.rate.Load())
	}
	return clamp(f.Rate)
}

func clamp(r float64) float64 {
	switch {
	case r > 1:
		return 1
	case r > 0:
		return r
	default: // negative or NaN
		return 0
	}
}

// Injected returns the number of faults injected so far per operation,
// keyed "Service.Operation" (for example "SQS.SendMessageBatch"), both
// kinds together. The map is a copy.
func (f *Injector) Injected() map[string]int {
	f.init()
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyMap(f.injected)
}

// InjectedAfter returns the number of faults injected after the server
// applied the call, per operation (a subset of Injected). The map is a
// copy.
func (f *Injector) InjectedAfter() map[string]int {
	f.init()
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyMap(f.after)
}

func copyMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// APIOptions returns the middleware to pass to config.WithAPIOptions (or a
// client's Options.APIOptions): one middleware added at the end of the
// Initialize step. The same Injector may be added to any number of clients
// (they share its rate, random draws and counts); adding it twice to the
// same client makes the stack fail with a duplicate middleware ID.
func (f *Injector) APIOptions() []func(*middleware.Stack) error {
	f.init()
	return []func(*middleware.Stack) error{func(stack *middleware.Stack) error {
		if f.PerAttempt {
			if err := stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc(f.id, f.handleAttempt), "Retry", middleware.After); err != nil {
				return fmt.Errorf("awsfault: adding the per-attempt fault injector: %w", err)
			}
			return nil
		}
		if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc(f.id, f.handle), middleware.After); err != nil {
			return fmt.Errorf("awsfault: adding the fault injector: %w", err)
		}
		return nil
	}}
}

// selected reports whether calls of svc.op may fail.
func (f *Injector) selected(svc, op string) bool {
	if len(f.Services) > 0 {
		found := false
		for _, s := range f.Services {
			if strings.EqualFold(s, svc) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if len(f.Operations) == 0 {
		return true
	}
	for _, o := range f.Operations {
		if o == op || o == svc+"."+op {
			return true
		}
	}
	return false
}

// draw decides whether the call svc.op fails and, if so, whether after the
// server's response, and counts the fault. It returns the fault's request
// ID sequence number.
func (f *Injector) draw(svc, op string) (fail, after bool, seq int) {
	rate := f.currentRate()
	if rate <= 0 || !f.selected(svc, op) {
		return false, false, 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng.Float64() >= rate {
		return false, false, 0
	}
	after = f.AfterShare > 0 && f.rng.Float64() < f.AfterShare
	key := svc + "." + op
	f.injected[key]++
	if after {
		f.after[key]++
	}
	f.seq++
	return true, after, f.seq
}

func (f *Injector) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	svc, op := middleware.GetServiceID(ctx), middleware.GetOperationName(ctx)
	fail, after, seq := f.draw(svc, op)
	if !fail {
		return next.HandleInitialize(ctx, in)
	}
	var md middleware.Metadata
	if after {
		// Whatever the real outcome, the caller sees the fault: a lost
		// response looks the same whether the call succeeded or not.
		out, m, _ := next.HandleInitialize(ctx, in)
		closeBody(out.Result)
		md = m
	}
	return middleware.InitializeOutput{}, md, newFault(svc, op, after, seq)
}

func (f *Injector) handleAttempt(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	svc, op := middleware.GetServiceID(ctx), middleware.GetOperationName(ctx)
	fail, after, seq := f.draw(svc, op)
	if !fail {
		return next.HandleFinalize(ctx, in)
	}
	var md middleware.Metadata
	if after {
		out, m, _ := next.HandleFinalize(ctx, in)
		closeBody(out.Result)
		md = m
	}
	return middleware.FinalizeOutput{}, md, newFault(svc, op, after, seq)
}

func newFault(svc, op string, after bool, seq int) *Fault {
	apiErr := &smithy.GenericAPIError{
		Code:    ErrorCode,
		Message: "We encountered an internal error. Please try again. (injected by awsfault)",
		Fault:   smithy.FaultServer,
	}
	resp := &http.Response{
		StatusCode: http.StatusInternalServerError,
		Status:     "500 Internal Server Error",
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{},
		Body:   http.NoBody,
	}
	return &Fault{
		Service:   svc,
		Operation: op,
		After:     after,
		resp: &awshttp.ResponseError{
			ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: apiErr},
			RequestID:     fmt.Sprintf("awsfault-%d", seq),
		},
	}
}

// closeBody closes the streaming Body of an output the caller will never
// see (for example *s3.GetObjectOutput), so that its connection is freed.
func closeBody(result any) {
	v := reflect.ValueOf(result)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	body := v.Elem().FieldByName("Body")
	if !body.IsValid() || !body.CanInterface() {
		return
	}
	if c, ok := body.Interface().(io.Closer); ok && c != nil {
		if rv := reflect.ValueOf(c); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return
		}
		_ = c.Close()
	}
}

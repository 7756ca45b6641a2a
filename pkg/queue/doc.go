// Package queue defines the message queue that carries urlcheck's work
// groups, with the semantics of an Amazon SQS standard queue, and Mem, an
// in-memory implementation for tests, benchmarks and single-process runs.
//
// The semantics follow the Amazon SQS Developer Guide: a received message is
// hidden for a visibility timeout and comes back unless deleted with the
// receipt handle of that receive; delivery is at least once and only roughly
// in order; a message received more than maxReceiveCount times moves to a
// dead-letter queue (redrive policy). Limits are SQS's: delay at most 15
// minutes, visibility timeout at most 12 hours, long poll at most 20 seconds,
// 1 to 10 messages per receive, bodies of 1 byte to 256 KiB.
//
// All times are read from an injected clock.Clock, so tests run visibility
// timeouts in simulated seconds with clock.NewScaled.
package queue

// Package pipeline is urlcheck's serverless pipeline: the handlers behind the
// HTTP API, the S3 drop folder (ingest) and the SQS checker, and the summary
// step, written against the core packages (groups, bucket, schedule, check,
// results) and the AWS adapters. The functions/ mains only wire them.
package pipeline

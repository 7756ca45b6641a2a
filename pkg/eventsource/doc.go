// Package eventsource runs urlcheck's Lambda handlers on one machine the way
// the AWS Lambda service invokes them, so that `make local` exercises the
// same handler code as the deployed serverless pipeline. It emulates three
// Lambda event sources:
//
//   - SQSPoller: an SQS event source mapping. It long-polls a queue, gathers
//     batches (BatchSize, BatchWindow), invokes an SQSHandler with an
//     events.SQSEvent under a concurrency limit (MaxConcurrency) and deletes
//     the records the handler processed, honouring partial batch responses
//     (ReportBatchItemFailures).
//   - HTTP: an API Gateway HTTP API with a Lambda proxy integration using
//     payload format 2.0. It turns net/http requests into
//     events.APIGatewayV2HTTPRequest values and writes the
//     events.APIGatewayV2HTTPResponse back.
//   - S3Webhook: S3 event notifications delivered to a Lambda function
//     (asynchronous invocation with retries), fed by the event webhook of
//     versitygw (the local S3 server, started with --event-webhook-url).
//
// The emulations follow the documented behaviour of the AWS services (AWS
// Lambda Developer Guide, "Using Lambda with Amazon SQS" and "Process Amazon
// S3 event notifications with Lambda"; API Gateway Developer Guide, "Create
// AWS Lambda proxy integrations for HTTP APIs"); where they simplify, the
// type's documentation says so.
package eventsource

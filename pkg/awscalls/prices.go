package awscalls

// Prices are unit prices in US dollars.
type Prices struct {
	// DynamoDBWriteUnit is the price of one on-demand write request unit.
	DynamoDBWriteUnit float64
	// DynamoDBReadUnit is the price of one on-demand read request unit.
	DynamoDBReadUnit float64
	// SQSRequest is the price of one SQS standard-queue request (one API
	// call per 64 KiB payload chunk).
	SQSRequest float64
	// S3PutTier is the price of one S3 Standard PUT, COPY, POST or LIST
	// request.
	S3PutTier float64
	// S3GetTier is the price of one S3 Standard GET, SELECT or other
	// request.
	S3GetTier float64
	// LambdaGBSecond is the price of one GB-second of Lambda duration.
	LambdaGBSecond float64
	// LambdaRequest is the price of one Lambda invocation.
	LambdaRequest float64
	// HTTPAPIRequest is the price of one API Gateway HTTP API request (of up
	// to 512 KB; larger ones are billed per 512 KB, which Cost ignores).
	HTTPAPIRequest float64
}

// USEast1 holds the on-demand list prices of US East (N. Virginia),
// free tiers ignored, as listed on these pages (figures recorded November
// 2026; check the pages before quoting a cost):
//
//   - DynamoDB on-demand, Standard table class, after the November 2024
//     price cut: $0.625 per million write request units, $0.125 per million
//     read request units — https://aws.amazon.com/dynamodb/pricing/on-demand/
//   - SQS standard queues: $0.40 per million requests (first million a month
//     free, ignored) — https://aws.amazon.com/sqs/pricing/
//   - S3 Standard: $0.005 per 1,000 PUT, COPY, POST, LIST requests, $0.0004
//     per 1,000 GET, SELECT and all other requests —
//     https://aws.amazon.com/s3/pricing/
//   - Lambda on Arm (arm64), first pricing tier: $0.0000133334 per GB-second,
//     $0.20 per million requests — https://aws.amazon.com/lambda/pricing/
//   - API Gateway HTTP APIs, first 300 million a month: $1.00 per million
//     requests — https://aws.amazon.com/api-gateway/pricing/
var USEast1 = Prices{
	DynamoDBWriteUnit: 0.625 / 1e6,
	DynamoDBReadUnit:  0.125 / 1e6,
	SQSRequest:        0.40 / 1e6,
	S3PutTier:         0.005 / 1e3,
	S3GetTier:         0.0004 / 1e3,
	LambdaGBSecond:    0.0000133334,
	LambdaRequest:     0.20 / 1e6,
	HTTPAPIRequest:    1.00 / 1e6,
}

// Cost is a cost in US dollars, per service and in total.
type Cost struct {
	DynamoDB, SQS, S3, Lambda, API, Total float64
}

// Scale returns c with every figure multiplied by f: for example
// c.Scale(75000/float64(urls)) for the cost of 75,000 URLs.
func (c Cost) Scale(f float64) Cost {
	return Cost{
		DynamoDB: c.DynamoDB * f,
		SQS:      c.SQS * f,
		S3:       c.S3 * f,
		Lambda:   c.Lambda * f,
		API:      c.API * f,
		Total:    c.Total * f,
	}
}

// Cost prices the calls of t plus lambdaGBSeconds GB-seconds of Lambda
// duration (memory in GB times billed seconds, summed over invocations),
// lambdaInvocations Lambda invocations and apiRequests HTTP API requests.
//
// DynamoDB writes are priced by t.WriteUnits when it is positive, else by
// call count (1 unit per DynamoDBWrites call, 2 for TransactWriteItems: an
// underestimate for batches and items over 1 KB); reads likewise by
// t.ReadUnits, else 1 unit per DynamoDBReads call (2 for TransactGetItems).
// SQS is priced per t.SQSRequests, S3 per t.S3Puts and t.S3Gets.
func (p Prices) Cost(t Tally, lambdaGBSeconds float64, lambdaInvocations, apiRequests int) Cost {
	writeUnits := t.WriteUnits
	if writeUnits <= 0 {
		writeUnits = float64(t.DynamoDBWrites() + t.Calls[DynamoDB+".TransactWriteItems"])
	}
	readUnits := t.ReadUnits
	if readUnits <= 0 {
		readUnits = float64(t.DynamoDBReads() + t.Calls[DynamoDB+".TransactGetItems"])
	}
	c := Cost{
		DynamoDB: writeUnits*p.DynamoDBWriteUnit + readUnits*p.DynamoDBReadUnit,
		SQS:      float64(t.SQSRequests()) * p.SQSRequest,
		S3:       float64(t.S3Puts())*p.S3PutTier + float64(t.S3Gets())*p.S3GetTier,
		Lambda:   lambdaGBSeconds*p.LambdaGBSecond + float64(lambdaInvocations)*p.LambdaRequest,
		API:      float64(apiRequests) * p.HTTPAPIRequest,
	}
	c.Total = c.DynamoDB + c.SQS + c.S3 + c.Lambda + c.API
	return c
}

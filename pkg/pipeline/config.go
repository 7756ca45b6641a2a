package pipeline

// Environment variables through which template.yaml (and the local pipeline)
// configure the functions. The names are the contract between the template
// and the code; the template test checks that every function gets the ones it
// reads.
const (
	// EnvJobsTable names the DynamoDB table of jobs and their progress
	// (package jobs).
	EnvJobsTable = "URLCHECK_JOBS_TABLE"
	// EnvDomainsTable names the DynamoDB table of per-domain token buckets
	// and learned rates (package bucket/dynamostore).
	EnvDomainsTable = "URLCHECK_DOMAINS_TABLE"
	// EnvQueueURL is the URL of the SQS standard queue of domain groups.
	EnvQueueURL = "URLCHECK_QUEUE_URL"
	// EnvBucket names the S3 bucket holding inbox/ uploads and results/.
	EnvBucket = "URLCHECK_BUCKET"
	// EnvJobTTLDays is how many days job items live in the jobs table
	// (DynamoDB TTL); empty = DefaultJobTTL.
	EnvJobTTLDays = "URLCHECK_JOB_TTL_DAYS"
	// EnvAPIKey, when set, is the key every API request must present in the
	// x-api-key header (the template's ApiKey auth mode); empty = none.
	EnvAPIKey = "URLCHECK_API_KEY"
	// EnvDDBEndpoint, EnvSQSEndpoint and EnvS3Endpoint override the AWS
	// endpoints (local servers); empty on AWS.
	EnvDDBEndpoint = "URLCHECK_DDB_ENDPOINT"
	EnvSQSEndpoint = "URLCHECK_SQS_ENDPOINT"
	EnvS3Endpoint  = "URLCHECK_S3_ENDPOINT"
)

// Default resource names used by the local pipeline (make local); on AWS the
// template's resources get generated names passed in the variables above.
const (
	DefaultJobsTable    = "urlcheck-jobs"
	DefaultDomainsTable = "urlcheck-domains"
	DefaultQueue        = "urlcheck-groups"
	DefaultDeadLetter   = "urlcheck-groups-dlq"
	DefaultBucket       = "urlcheck-data"
)

// Routes are the HTTP API's routes ("METHOD /path", API Gateway route keys).
var Routes = []string{
	"POST /jobs",
	"POST /uploads",
	"GET /jobs/{id}",
	"GET /jobs/{id}/results",
	"DELETE /jobs/{id}",
}

// Object key prefixes in the bucket.
const (
	// InboxPrefix is the drop folder: an object created under it becomes a
	// job (the S3 notification on this prefix triggers the ingest function).
	InboxPrefix = "inbox/"
	// ResultsPrefix holds each job's results: results/<job>/parts/...,
	// results.jsonl, results.csv and summary.json.
	ResultsPrefix = "results/"
)

// Command ingest is the Lambda function behind the S3 drop folder (ObjectCreated
// under inbox/): it only wires pipeline.Deps.Ingest to the
// Lambda runtime. Configuration comes from the environment (template.yaml).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/urlcheck/urlcheck/pkg/pipeline"
)

func main() {
	d, err := pipeline.FromEnv(context.Background())
	if err != nil {
		log.Fatalf("ingest: %v", err)
	}
	lambda.Start(d.Ingest)
}

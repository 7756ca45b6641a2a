// Command api is the Lambda function behind the HTTP API (API Gateway HTTP
// API, payload format 2.0): it only wires pipeline.Deps.HandleAPI to the
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
		log.Fatalf("api: %v", err)
	}
	lambda.Start(d.HandleAPI)
}

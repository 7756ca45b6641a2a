// Command checker is the Lambda function consuming the groups queue (SQS event
// source, partial batch responses): it only wires pipeline.Deps.HandleSQS to the
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
		log.Fatalf("checker: %v", err)
	}
	lambda.Start(d.HandleSQS)
}

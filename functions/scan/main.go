// Command scan is the Lambda function behind the scheduled-scan state
// machine (infra/scan.asl.json): it only wires scan.Handler.Handle to the
// Lambda runtime, with pipeline.Deps from the environment (template.yaml)
// and an SNS client for the topic named by URLCHECK_SCAN_TOPIC.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/urlcheck/urlcheck/pkg/awsconfig"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/scan"
)

func main() {
	ctx := context.Background()
	d, err := pipeline.FromEnv(ctx)
	if err != nil {
		log.Fatalf("scan: %v", err)
	}
	cfg, err := awsconfig.Load(ctx, os.Getenv("AWS_REGION"))
	if err != nil {
		log.Fatalf("scan: %v", err)
	}
	h := &scan.Handler{Deps: d, Notifier: sns.NewFromConfig(cfg), TopicARN: os.Getenv(scan.EnvTopic)}
	lambda.Start(h.Handle)
}

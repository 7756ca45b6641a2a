// Package awsconfig loads the AWS configuration that every AWS adapter of
// urlcheck (dynamostore, sqsqueue, s3store) builds its client from, so that
// credentials and region are found the same way for all of them.
package awsconfig

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Load returns the default AWS configuration (environment, shared config
// files, instance or task roles); region, when not empty, overrides the
// configured region. Each adapter then sets its own BaseEndpoint from
// configuration, so the same code runs on AWS and on local servers. It
// extra load options follow (for example config.WithAPIOptions to add SDK
// middleware that counts calls or injects faults). It returns an error,
// wrapped, if the configuration cannot be loaded.
func Load(ctx context.Context, region string, extra ...func(*config.LoadOptions) error) (aws.Config, error) {
	opts := append([]func(*config.LoadOptions) error(nil), extra...)
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading AWS configuration: %w", err)
	}
	return cfg, nil
}

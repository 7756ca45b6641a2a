// Package infra holds no code: it is the home of the deployment files'
// tests. The files themselves live at the repository root (template.yaml,
// the AWS SAM template; samconfig.toml; events/, sample Lambda events for
// `sam local invoke -e`) and here (openapi.yaml, the HTTP API's OpenAPI 3.0.3
// description; local/, the local AWS-compatible servers).
//
// The tests parse template.yaml with gopkg.in/yaml.v3, turning CloudFormation
// short-form tags (!Ref, !GetAtt, !Sub, ...) into their long JSON forms, and
// check it against the contract in package pipeline (environment variable
// names, routes, key prefixes): resource types, function settings, event
// sources, reference integrity and least-privilege IAM statements. They
// validate openapi.yaml with kin-openapi and decode every sample event into its
// aws-lambda-go type. None of them needs AWS or a network.
package infra

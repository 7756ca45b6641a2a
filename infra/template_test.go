package infra

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/scan"
)

// bucketName is the data bucket's fixed name pattern (an Fn::Sub string).
// Functions and policies spell the name out instead of referring to the
// bucket resource, which would close a dependency cycle through the S3 event.
const bucketName = "${AWS::StackName}-data-${AWS::AccountId}-${AWS::Region}"

// functions are the template's Lambda functions with their code directory.
var functions = []struct {
	id, codeURI    string
	timeout, memMB int
}{
	{"ApiFunction", "functions/api", 29, 512},
	{"IngestFunction", "functions/ingest", 900, 1769},
	{"CheckerFunction", "functions/checker", 120, 1024},
	{"ScanFunction", "functions/scan", 900, 1769},
}

// resource returns the Properties of resource id, failing the test if the
// resource is missing.
func resource(t *testing.T, tmpl map[string]any, id string) map[string]any {
	t.Helper()
	r, ok := dig(tmpl, "Resources", id).(map[string]any)
	if !ok {
		t.Fatalf("no resource %s", id)
	}
	p, _ := r["Properties"].(map[string]any)
	return p
}

// function returns the effective properties of function id: Globals.Function
// overlaid with the function's own properties, Environment.Variables merged
// key by key, as the SAM transform does.
func function(t *testing.T, tmpl map[string]any, id string) map[string]any {
	t.Helper()
	own := resource(t, tmpl, id)
	glob, _ := dig(tmpl, "Globals", "Function").(map[string]any)
	eff := maps.Clone(glob)
	if eff == nil {
		eff = map[string]any{}
	}
	maps.Copy(eff, own)
	vars := map[string]any{}
	if g, ok := dig(glob, "Environment", "Variables").(map[string]any); ok {
		maps.Copy(vars, g)
	}
	if o, ok := dig(own, "Environment", "Variables").(map[string]any); ok {
		maps.Copy(vars, o)
	}
	eff["Environment"] = map[string]any{"Variables": vars}
	return eff
}

// fnEvents returns function id's events of type typ, by event name.
func fnEvents(t *testing.T, tmpl map[string]any, id, typ string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	evs, _ := dig(resource(t, tmpl, id), "Events").(map[string]any)
	for name, e := range evs {
		if dig(e, "Type") == typ {
			p, _ := dig(e, "Properties").(map[string]any)
			out[name] = p
		}
	}
	return out
}

func TestTemplateHeader(t *testing.T) {
	tmpl := loadTemplate(t)
	if got := tmpl["AWSTemplateFormatVersion"]; got != "2010-09-09" {
		t.Errorf("AWSTemplateFormatVersion = %v", got)
	}
	// LanguageExtensions must run first: it resolves the Fn::If in the
	// HttpApi's Auth before SAM reads it.
	want := []any{"AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"}
	if got := tmpl["Transform"]; !reflect.DeepEqual(got, want) {
		t.Errorf("Transform = %v, want %v", got, want)
	}
}

func TestResourceTypes(t *testing.T) {
	tmpl := loadTemplate(t)
	want := map[string]string{
		"HttpApi":                "AWS::Serverless::HttpApi",
		"ApiFunction":            "AWS::Serverless::Function",
		"IngestFunction":         "AWS::Serverless::Function",
		"CheckerFunction":        "AWS::Serverless::Function",
		"GroupsQueue":            "AWS::SQS::Queue",
		"DeadLetterQueue":        "AWS::SQS::Queue",
		"AlarmTopic":             "AWS::SNS::Topic",
		"AlarmEmailSubscription": "AWS::SNS::Subscription",
		"DeadLetterAlarm":        "AWS::CloudWatch::Alarm",
		"JobsTable":              "AWS::DynamoDB::Table",
		"DomainsTable":           "AWS::DynamoDB::Table",
		"DataBucket":             "AWS::S3::Bucket",
		"DataBucketPolicy":       "AWS::S3::BucketPolicy",
		"ScanFunction":           "AWS::Serverless::Function",
		"ScanStateMachine":       "AWS::Serverless::StateMachine",
		"ScanTopic":              "AWS::SNS::Topic",
		"ScanEmailSubscription":  "AWS::SNS::Subscription",
		"ScanScheduleRole":       "AWS::IAM::Role",
		"ScanScheduleEntry":      "AWS::Scheduler::Schedule",
	}
	res, _ := tmpl["Resources"].(map[string]any)
	for id, typ := range want {
		if got := dig(res, id, "Type"); got != typ {
			t.Errorf("resource %s: Type = %v, want %s", id, got, typ)
		}
	}
	for id := range res {
		if _, ok := want[id]; !ok {
			t.Errorf("resource %s is not covered by this test; add it to the table", id)
		}
	}
}

func TestParameters(t *testing.T) {
	tmpl := loadTemplate(t)
	tests := []struct {
		name  string
		field string
		want  any
	}{
		{"AuthMode", "Default", "IAM"},
		{"AuthMode", "AllowedValues", []any{"IAM", "ApiKey"}},
		{"ApiKey", "NoEcho", true},
		{"ApiKey", "Default", ""},
		{"CheckerMaxConcurrency", "Default", 20},
		{"CheckerMaxConcurrency", "MinValue", 2},
		{"CheckerMaxConcurrency", "MaxValue", 1000},
		{"CheckerBatchSize", "Default", 100},
		{"ResultsRetentionDays", "Default", 30},
		{"InboxRetentionDays", "Default", 7},
		{"JobTTLDays", "Default", 30},
		{"AlarmEmail", "Default", ""},
		{"ScanName", "Default", "nightly"},
		{"ScanListKey", "Default", ""},
		{"ScanSchedule", "Default", "rate(1 day)"},
		{"ScanEmail", "Default", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name+"."+tt.field, func(t *testing.T) {
			if got := dig(tmpl, "Parameters", tt.name, tt.field); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
	// Every parameter is used somewhere outside Parameters.
	params, _ := tmpl["Parameters"].(map[string]any)
	used := map[string]bool{}
	rest := maps.Clone(tmpl)
	delete(rest, "Parameters")
	walk(rest, nil, func(_ []string, v any) {
		if m, ok := v.(map[string]any); ok {
			if r, ok := m["Ref"].(string); ok {
				used[r] = true
			}
			sub, _ := m["Fn::Sub"].(string)
			if l, ok := m["Fn::Sub"].([]any); ok && len(l) > 0 {
				sub, _ = l[0].(string)
			}
			for _, sm := range subVar.FindAllStringSubmatch(sub, -1) {
				used[sm[1]] = true
			}
		}
	})
	for p := range params {
		if !used[p] {
			t.Errorf("parameter %s is never referenced", p)
		}
	}
}

func TestFunctionSettings(t *testing.T) {
	tmpl := loadTemplate(t)
	for _, f := range functions {
		t.Run(f.id, func(t *testing.T) {
			p := function(t, tmpl, f.id)
			checks := []struct {
				field string
				want  any
			}{
				{"Runtime", "provided.al2023"},
				{"Architectures", []any{"arm64"}},
				{"Handler", "bootstrap"},
				{"CodeUri", f.codeURI},
				{"Timeout", f.timeout},
				{"MemorySize", f.memMB},
			}
			for _, c := range checks {
				if got := p[c.field]; !reflect.DeepEqual(got, c.want) {
					t.Errorf("%s = %#v, want %#v", c.field, got, c.want)
				}
			}
			if _, ok := p["ReservedConcurrentExecutions"]; ok {
				t.Errorf("ReservedConcurrentExecutions is set")
			}
			md := dig(tmpl, "Resources", f.id, "Metadata")
			if got := dig(md, "BuildMethod"); got != "makefile" {
				t.Errorf("Metadata.BuildMethod = %v, want makefile", got)
			}
			// The build runs the root Makefile on the whole module.
			if got := dig(md, "ContextPath"); got != "." {
				t.Errorf("Metadata.ContextPath = %v, want .", got)
			}
			if got := dig(md, "ProjectRootDirectory"); got != "." {
				t.Errorf("Metadata.ProjectRootDirectory = %v, want .", got)
			}
		})
	}
}

func TestEnvironment(t *testing.T) {
	tmpl := loadTemplate(t)
	bucket := dig(resource(t, tmpl, "DataBucket"), "BucketName")
	if !reflect.DeepEqual(bucket, sub(bucketName)) {
		t.Fatalf("DataBucket BucketName = %#v, want !Sub %q", bucket, bucketName)
	}
	apiKey := map[string]any{"Fn::If": []any{"UseApiKey", ref("ApiKey"), ""}}
	for _, f := range functions {
		t.Run(f.id, func(t *testing.T) {
			vars := dig(function(t, tmpl, f.id), "Environment", "Variables").(map[string]any)
			want := map[string]any{
				pipeline.EnvJobsTable:    ref("JobsTable"),
				pipeline.EnvDomainsTable: ref("DomainsTable"),
				pipeline.EnvQueueURL:     ref("GroupsQueue"),
				pipeline.EnvBucket:       bucket,
			}
			if f.id == "ApiFunction" {
				want[pipeline.EnvAPIKey] = apiKey
			}
			if f.id == "ScanFunction" {
				want[scan.EnvTopic] = ref("ScanTopic")
			}
			for name, w := range want {
				if got, ok := vars[name]; !ok || !reflect.DeepEqual(got, w) {
					t.Errorf("%s = %#v, want %#v", name, got, w)
				}
			}
			// Only the API function gets the key; endpoint overrides are for
			// local servers and must stay unset on AWS.
			for _, name := range []string{pipeline.EnvDDBEndpoint, pipeline.EnvSQSEndpoint, pipeline.EnvS3Endpoint} {
				if _, ok := vars[name]; ok {
					t.Errorf("%s is set", name)
				}
			}
			if _, ok := vars[pipeline.EnvAPIKey]; ok && f.id != "ApiFunction" {
				t.Errorf("%s is set on %s", pipeline.EnvAPIKey, f.id)
			}
		})
	}
}

func TestCheckerQueueEvent(t *testing.T) {
	tmpl := loadTemplate(t)
	evs := fnEvents(t, tmpl, "CheckerFunction", "SQS")
	if len(evs) != 1 {
		t.Fatalf("CheckerFunction has %d SQS events, want 1", len(evs))
	}
	for _, p := range evs {
		checks := []struct {
			path []string
			want any
		}{
			{[]string{"Queue"}, getAtt("GroupsQueue", "Arn")},
			{[]string{"BatchSize"}, ref("CheckerBatchSize")},
			{[]string{"MaximumBatchingWindowInSeconds"}, 1},
			{[]string{"FunctionResponseTypes"}, []any{"ReportBatchItemFailures"}},
			{[]string{"ScalingConfig", "MaximumConcurrency"}, ref("CheckerMaxConcurrency")},
		}
		for _, c := range checks {
			if got := dig(p, c.path...); !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s = %#v, want %#v", strings.Join(c.path, "."), got, c.want)
			}
		}
	}
	for _, id := range []string{"ApiFunction", "IngestFunction"} {
		if n := len(fnEvents(t, tmpl, id, "SQS")); n != 0 {
			t.Errorf("%s has %d SQS events", id, n)
		}
	}
}

func TestIngestS3Event(t *testing.T) {
	tmpl := loadTemplate(t)
	evs := fnEvents(t, tmpl, "IngestFunction", "S3")
	if len(evs) != 1 {
		t.Fatalf("IngestFunction has %d S3 events, want 1", len(evs))
	}
	for _, p := range evs {
		if got := p["Bucket"]; !reflect.DeepEqual(got, ref("DataBucket")) {
			t.Errorf("Bucket = %#v", got)
		}
		if got := p["Events"]; got != "s3:ObjectCreated:*" && !reflect.DeepEqual(got, []any{"s3:ObjectCreated:*"}) {
			t.Errorf("Events = %#v, want s3:ObjectCreated:*", got)
		}
		rules, _ := dig(p, "Filter", "S3Key", "Rules").([]any)
		want := []any{map[string]any{"Name": "prefix", "Value": pipeline.InboxPrefix}}
		if !reflect.DeepEqual(rules, want) {
			t.Errorf("Filter rules = %#v, want %#v", rules, want)
		}
	}
}

func TestRoutes(t *testing.T) {
	tmpl := loadTemplate(t)
	var got []string
	for name, p := range fnEvents(t, tmpl, "ApiFunction", "HttpApi") {
		if !reflect.DeepEqual(p["ApiId"], ref("HttpApi")) {
			t.Errorf("event %s: ApiId = %#v, want !Ref HttpApi", name, p["ApiId"])
		}
		if p["PayloadFormatVersion"] != "2.0" {
			t.Errorf("event %s: PayloadFormatVersion = %#v, want \"2.0\"", name, p["PayloadFormatVersion"])
		}
		if _, ok := p["Auth"]; ok {
			t.Errorf("event %s overrides the API's Auth", name)
		}
		got = append(got, fmt.Sprintf("%v %v", p["Method"], p["Path"]))
	}
	want := slices.Clone(pipeline.Routes)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("ApiFunction HttpApi events = %q, want pipeline.Routes %q", got, want)
	}
	for _, id := range []string{"IngestFunction", "CheckerFunction"} {
		if n := len(fnEvents(t, tmpl, id, "HttpApi")) + len(fnEvents(t, tmpl, id, "Api")); n != 0 {
			t.Errorf("%s has %d API events", id, n)
		}
	}
}

func TestHttpApi(t *testing.T) {
	tmpl := loadTemplate(t)
	p := resource(t, tmpl, "HttpApi")
	if p["FailOnWarnings"] != true {
		t.Errorf("FailOnWarnings = %v, want true", p["FailOnWarnings"])
	}
	if _, ok := p["CorsConfiguration"]; ok {
		t.Errorf("CorsConfiguration is set; CORS is meant to be off")
	}
	wantAuth := map[string]any{"Fn::If": []any{
		"UseIamAuth",
		map[string]any{"EnableIamAuthorizer": true, "DefaultAuthorizer": "AWS_IAM"},
		ref("AWS::NoValue"),
	}}
	if !reflect.DeepEqual(p["Auth"], wantAuth) {
		t.Errorf("Auth = %#v, want %#v", p["Auth"], wantAuth)
	}
	conds := []struct {
		name string
		want any
	}{
		{"UseIamAuth", map[string]any{"Fn::Equals": []any{ref("AuthMode"), "IAM"}}},
		{"UseApiKey", map[string]any{"Fn::Equals": []any{ref("AuthMode"), "ApiKey"}}},
		{"HasAlarmEmail", map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{ref("AlarmEmail"), ""}}}}},
	}
	for _, c := range conds {
		if got := dig(tmpl, "Conditions", c.name); !reflect.DeepEqual(got, c.want) {
			t.Errorf("condition %s = %#v, want %#v", c.name, got, c.want)
		}
	}
}

func TestQueues(t *testing.T) {
	tmpl := loadTemplate(t)
	q := resource(t, tmpl, "GroupsQueue")
	checkerTimeout, _ := function(t, tmpl, "CheckerFunction")["Timeout"].(int)
	if vt, _ := q["VisibilityTimeout"].(int); checkerTimeout == 0 || vt < 6*checkerTimeout {
		t.Errorf("VisibilityTimeout = %v, want >= 6 x checker Timeout %d", q["VisibilityTimeout"], checkerTimeout)
	}
	checks := []struct {
		res  string
		path []string
		want any
	}{
		{"GroupsQueue", []string{"RedrivePolicy", "maxReceiveCount"}, 10},
		{"GroupsQueue", []string{"RedrivePolicy", "deadLetterTargetArn"}, getAtt("DeadLetterQueue", "Arn")},
		{"GroupsQueue", []string{"MessageRetentionPeriod"}, 14 * 24 * 3600},
		{"GroupsQueue", []string{"SqsManagedSseEnabled"}, true},
		{"GroupsQueue", []string{"FifoQueue"}, nil},
		{"DeadLetterQueue", []string{"MessageRetentionPeriod"}, 14 * 24 * 3600},
		{"DeadLetterQueue", []string{"SqsManagedSseEnabled"}, true},
		{"DeadLetterAlarm", []string{"Namespace"}, "AWS/SQS"},
		{"DeadLetterAlarm", []string{"MetricName"}, "ApproximateNumberOfMessagesVisible"},
		{"DeadLetterAlarm", []string{"Dimensions"}, []any{map[string]any{"Name": "QueueName", "Value": getAtt("DeadLetterQueue", "QueueName")}}},
		{"DeadLetterAlarm", []string{"Threshold"}, 1},
		{"DeadLetterAlarm", []string{"ComparisonOperator"}, "GreaterThanOrEqualToThreshold"},
		{"DeadLetterAlarm", []string{"AlarmActions"}, []any{ref("AlarmTopic")}},
		{"AlarmEmailSubscription", []string{"TopicArn"}, ref("AlarmTopic")},
		{"AlarmEmailSubscription", []string{"Protocol"}, "email"},
		{"AlarmEmailSubscription", []string{"Endpoint"}, ref("AlarmEmail")},
	}
	for _, c := range checks {
		if got := dig(resource(t, tmpl, c.res), c.path...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s.%s = %#v, want %#v", c.res, strings.Join(c.path, "."), got, c.want)
		}
	}
	if got := dig(tmpl, "Resources", "AlarmEmailSubscription", "Condition"); got != "HasAlarmEmail" {
		t.Errorf("AlarmEmailSubscription Condition = %v, want HasAlarmEmail", got)
	}
}

func TestTables(t *testing.T) {
	tmpl := loadTemplate(t)
	checks := []struct {
		res  string
		path []string
		want any
	}{
		{"JobsTable", []string{"BillingMode"}, "PAY_PER_REQUEST"},
		{"JobsTable", []string{"KeySchema"}, []any{
			map[string]any{"AttributeName": "job", "KeyType": "HASH"},
			map[string]any{"AttributeName": "sk", "KeyType": "RANGE"}}},
		{"JobsTable", []string{"AttributeDefinitions"}, []any{
			map[string]any{"AttributeName": "job", "AttributeType": "S"},
			map[string]any{"AttributeName": "sk", "AttributeType": "S"}}},
		{"JobsTable", []string{"TimeToLiveSpecification"}, map[string]any{"AttributeName": "expires", "Enabled": true}},
		{"JobsTable", []string{"SSESpecification", "SSEEnabled"}, true},
		{"DomainsTable", []string{"BillingMode"}, "PAY_PER_REQUEST"},
		{"DomainsTable", []string{"KeySchema"}, []any{map[string]any{"AttributeName": "domain", "KeyType": "HASH"}}},
		{"DomainsTable", []string{"AttributeDefinitions"}, []any{map[string]any{"AttributeName": "domain", "AttributeType": "S"}}},
	}
	for _, c := range checks {
		if got := dig(resource(t, tmpl, c.res), c.path...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s.%s = %#v, want %#v", c.res, strings.Join(c.path, "."), got, c.want)
		}
	}
}

func TestBucket(t *testing.T) {
	tmpl := loadTemplate(t)
	b := resource(t, tmpl, "DataBucket")
	checks := []struct {
		path []string
		want any
	}{
		{[]string{"BucketName"}, sub(bucketName)},
		{[]string{"BucketEncryption", "ServerSideEncryptionConfiguration"}, []any{map[string]any{
			"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"},
			"BucketKeyEnabled":              true}}},
		{[]string{"PublicAccessBlockConfiguration"}, map[string]any{
			"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true}},
		{[]string{"OwnershipControls", "Rules"}, []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}}},
		{[]string{"VersioningConfiguration"}, nil},
	}
	for _, c := range checks {
		if got := dig(b, c.path...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("DataBucket.%s = %#v, want %#v", strings.Join(c.path, "."), got, c.want)
		}
	}
	// Lifecycle: one rule per prefix plus the multipart clean-up.
	type rule struct {
		prefix  string
		expires any
		abort   any
	}
	var rules []rule
	rs, _ := dig(b, "LifecycleConfiguration", "Rules").([]any)
	for _, r := range rs {
		if dig(r, "Status") != "Enabled" {
			t.Errorf("lifecycle rule %v is not Enabled", dig(r, "Id"))
		}
		p, _ := dig(r, "Prefix").(string)
		rules = append(rules, rule{p, dig(r, "ExpirationInDays"), dig(r, "AbortIncompleteMultipartUpload", "DaysAfterInitiation")})
	}
	wantRules := []rule{
		{pipeline.InboxPrefix, ref("InboxRetentionDays"), nil},
		{pipeline.ResultsPrefix, ref("ResultsRetentionDays"), nil},
		{"", nil, 1},
	}
	if !reflect.DeepEqual(rules, wantRules) {
		t.Errorf("lifecycle rules = %#v, want %#v", rules, wantRules)
	}
	// The bucket policy denies every request not made over TLS.
	pol := resource(t, tmpl, "DataBucketPolicy")
	if !reflect.DeepEqual(pol["Bucket"], ref("DataBucket")) {
		t.Errorf("DataBucketPolicy Bucket = %#v", pol["Bucket"])
	}
	found := false
	for _, s := range statements(dig(pol, "PolicyDocument")) {
		if s["Effect"] == "Deny" && dig(s, "Condition", "Bool", "aws:SecureTransport") == "false" &&
			s["Principal"] == "*" && s["Action"] == "s3:*" &&
			reflect.DeepEqual(s["Resource"], []any{getAtt("DataBucket", "Arn"), sub("${DataBucket.Arn}/*")}) {
			found = true
		}
	}
	if !found {
		t.Errorf("DataBucketPolicy has no statement denying s3:* on the bucket and its objects when aws:SecureTransport is false")
	}
	// No function refers to the bucket resource except its S3 event: that
	// would make a dependency cycle (bucket -> notification permission ->
	// function -> bucket).
	for _, f := range functions {
		own := maps.Clone(resource(t, tmpl, f.id))
		delete(own, "Events")
		walk(own, nil, func(path []string, v any) {
			if m, ok := v.(map[string]any); ok {
				if m["Ref"] == "DataBucket" || dig(m, "Fn::GetAtt", "0") == "DataBucket" {
					t.Errorf("%s.%s refers to DataBucket", f.id, strings.Join(path, "."))
				}
				if s, ok := m["Fn::Sub"].(string); ok && strings.Contains(s, "${DataBucket") {
					t.Errorf("%s.%s refers to DataBucket in !Sub", f.id, strings.Join(path, "."))
				}
			}
		})
	}
	if got := dig(tmpl, "Globals", "Function", "Environment", "Variables", pipeline.EnvBucket); !reflect.DeepEqual(got, sub(bucketName)) {
		t.Errorf("Globals %s = %#v, want !Sub %q", pipeline.EnvBucket, got, bucketName)
	}
}

func TestReferences(t *testing.T) {
	tmpl := loadTemplate(t)
	resources, _ := tmpl["Resources"].(map[string]any)
	params, _ := tmpl["Parameters"].(map[string]any)
	conds, _ := tmpl["Conditions"].(map[string]any)
	isRefTarget := func(name string) bool {
		_, r := resources[name]
		_, p := params[name]
		return r || p || pseudoParameters[name]
	}
	checkSub := func(where string, s string, local map[string]any) {
		for _, m := range subVar.FindAllStringSubmatch(s, -1) {
			name := m[1]
			if _, ok := local[name]; ok {
				continue
			}
			if res, _, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
				if _, ok := resources[res]; !ok {
					t.Errorf("%s: ${%s} names no resource", where, name)
				}
				continue
			}
			if !isRefTarget(name) {
				t.Errorf("%s: ${%s} names no resource, parameter or pseudo parameter", where, name)
			}
		}
	}
	n := 0
	walk(tmpl, nil, func(path []string, v any) {
		where := strings.Join(path, ".")
		if len(path) == 3 && path[0] == "Resources" && path[2] == "Condition" {
			if _, ok := conds[v.(string)]; !ok {
				t.Errorf("%s: condition %v is not defined", where, v)
			}
		}
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return
		}
		for k, arg := range m {
			switch k {
			case "Ref":
				n++
				name, _ := arg.(string)
				if !isRefTarget(name) {
					t.Errorf("%s: Ref %q names no resource, parameter or pseudo parameter", where, name)
				}
				if path[0] == "Conditions" || path[0] == "Rules" {
					if _, ok := params[name]; !ok && !pseudoParameters[name] {
						t.Errorf("%s: Ref %q in %s must name a parameter", where, name, path[0])
					}
				}
			case "Fn::GetAtt":
				n++
				if res, _ := dig(arg, "0").(string); resources[res] == nil {
					t.Errorf("%s: GetAtt %v names no resource", where, arg)
				}
			case "Fn::Sub":
				n++
				switch a := arg.(type) {
				case string:
					checkSub(where, a, nil)
				case []any:
					s, _ := dig(a, "0").(string)
					local, _ := dig(a, "1").(map[string]any)
					checkSub(where, s, local)
				default:
					t.Errorf("%s: Fn::Sub of %T", where, arg)
				}
			case "Fn::If":
				n++
				if c, _ := dig(arg, "0").(string); conds[c] == nil {
					t.Errorf("%s: Fn::If on undefined condition %v", where, dig(arg, "0"))
				}
			case "Condition": // the condition function of !Condition
				if c, ok := arg.(string); ok && conds[c] == nil {
					t.Errorf("%s: Condition %v is not defined", where, arg)
				}
			}
		}
	})
	if n < 20 {
		t.Errorf("found only %d references; is the walk broken?", n)
	}
}

// statements returns the Statement list of a policy document (a single
// statement is returned as a list of one).
func statements(doc any) []map[string]any {
	var out []map[string]any
	switch s := dig(doc, "Statement").(type) {
	case []any:
		for _, e := range s {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
	case map[string]any:
		out = append(out, s)
	}
	return out
}

// strs returns v as a list of strings: a string alone, or every string of a
// list.
func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// resourceKey renders a policy Resource entry compactly: "JobsTable.Arn",
// "bucket/inbox/*", "bucket", or the value itself.
func resourceKey(v any) string {
	if a, ok := dig(v, "Fn::GetAtt").([]any); ok && len(a) == 2 {
		return fmt.Sprintf("%v.%v", a[0], a[1])
	}
	if r, ok := dig(v, "Ref").(string); ok {
		return "Ref " + r
	}
	if s, ok := dig(v, "Fn::Sub").(string); ok {
		return strings.Replace(s, "arn:${AWS::Partition}:s3:::"+bucketName, "bucket", 1)
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprintf("%v", v)
}

func TestLeastPrivilege(t *testing.T) {
	tmpl := loadTemplate(t)
	// want lists every grant of each function, as "action on resource".
	// Receive/Delete/GetQueueAttributes on the queue come from SAM's SQS
	// event source (it adds AWSLambdaSQSQueueExecutionRole-like statements
	// scoped to the queue), and logs:* from AWSLambdaBasicExecutionRole.
	want := map[string][]string{
		"ApiFunction": {
			"dynamodb:GetItem on JobsTable.Arn", "dynamodb:PutItem on JobsTable.Arn",
			"dynamodb:UpdateItem on JobsTable.Arn", "dynamodb:Query on JobsTable.Arn",
			"dynamodb:GetItem on DomainsTable.Arn",
			"s3:PutObject on bucket/inbox/*", "s3:GetObject on bucket/results/*",
		},
		"IngestFunction": {
			"s3:GetObject on bucket/inbox/*", "s3:PutObject on bucket/results/*",
			"dynamodb:GetItem on JobsTable.Arn", "dynamodb:PutItem on JobsTable.Arn",
			"dynamodb:UpdateItem on JobsTable.Arn", "dynamodb:Query on JobsTable.Arn",
			"sqs:SendMessage on GroupsQueue.Arn",
		},
		"CheckerFunction": {
			"dynamodb:GetItem on JobsTable.Arn", "dynamodb:PutItem on JobsTable.Arn",
			"dynamodb:UpdateItem on JobsTable.Arn", "dynamodb:Query on JobsTable.Arn",
			"dynamodb:GetItem on DomainsTable.Arn", "dynamodb:PutItem on DomainsTable.Arn",
			"dynamodb:UpdateItem on DomainsTable.Arn", "dynamodb:Query on DomainsTable.Arn",
			"sqs:SendMessage on GroupsQueue.Arn", "sqs:ChangeMessageVisibility on GroupsQueue.Arn",
			"s3:PutObject on bucket/results/*", "s3:GetObject on bucket/results/*",
			"s3:ListBucket on bucket if s3:prefix like " + pipeline.ResultsPrefix + "*",
		},
		// The scan function ingests (start), checks status (which may
		// summarize), diffs and records scans, and notifies.
		"ScanFunction": {
			"dynamodb:GetItem on JobsTable.Arn", "dynamodb:PutItem on JobsTable.Arn",
			"dynamodb:UpdateItem on JobsTable.Arn", "dynamodb:Query on JobsTable.Arn",
			"dynamodb:GetItem on DomainsTable.Arn",
			"sqs:SendMessage on GroupsQueue.Arn",
			"s3:GetObject on bucket/" + scan.ListsPrefix + "*",
			"s3:GetObject on bucket/inbox/*", "s3:PutObject on bucket/inbox/*",
			"s3:GetObject on bucket/results/*", "s3:PutObject on bucket/results/*",
			"s3:GetObject on bucket/" + scan.Prefix + "*", "s3:PutObject on bucket/" + scan.Prefix + "*",
			"s3:ListBucket on bucket if s3:prefix like [" + pipeline.ResultsPrefix + "* " + scan.Prefix + "*]",
			"sns:Publish on Ref ScanTopic",
		},
	}
	for _, f := range functions {
		t.Run(f.id, func(t *testing.T) {
			pols, _ := dig(function(t, tmpl, f.id), "Policies").([]any)
			var got []string
			for i, p := range pols {
				m, ok := p.(map[string]any)
				if !ok || m["Statement"] == nil {
					// Managed policy names and SAM policy templates are not
					// used: inline statements say exactly what is granted.
					t.Errorf("Policies[%d] = %#v is not an inline statement list", i, p)
					continue
				}
				for _, s := range statements(m) {
					if s["Effect"] != "Allow" {
						t.Errorf("statement %v: Effect %v", s["Sid"], s["Effect"])
						continue
					}
					if _, ok := s["NotAction"]; ok {
						t.Errorf("statement %v uses NotAction", s["Sid"])
					}
					if _, ok := s["NotResource"]; ok {
						t.Errorf("statement %v uses NotResource", s["Sid"])
					}
					cond := ""
					if c := dig(s, "Condition", "StringLike", "s3:prefix"); c != nil {
						cond = fmt.Sprintf(" if s3:prefix like %v", c)
					}
					res := s["Resource"]
					if _, ok := res.([]any); !ok {
						res = []any{res}
					}
					for _, a := range strs(s["Action"]) {
						for _, r := range res.([]any) {
							got = append(got, a+" on "+resourceKey(r)+cond)
						}
					}
				}
			}
			w := slices.Clone(want[f.id])
			sort.Strings(got)
			sort.Strings(w)
			if !slices.Equal(got, w) {
				t.Errorf("grants:\n got %q\nwant %q", got, w)
			}
			for _, g := range got {
				action, _, _ := strings.Cut(g, " ")
				if strings.Contains(action, "*") {
					t.Errorf("wildcard action %s", action)
				}
				// Deleting messages is the SQS poller's job only: a function
				// that deletes could lose a message the batch response
				// reports as failed.
				if strings.HasPrefix(strings.ToLower(action), "sqs:delete") {
					t.Errorf("%s may call %s", f.id, action)
				}
			}
		})
	}
	// No statement anywhere allows or denies Action "*" or Resource "*".
	// Exceptions (none so far) would be actions AWS only grants on "*", such
	// as xray:PutTraceSegments or cloudwatch:PutMetricData.
	exceptions := map[string]bool{}
	walk(tmpl, nil, func(path []string, v any) {
		m, ok := v.(map[string]any)
		if !ok || m["Effect"] == nil {
			return
		}
		for _, a := range strs(m["Action"]) {
			if a == "*" && !exceptions[strings.Join(path, ".")] {
				t.Errorf("%s: Action \"*\"", strings.Join(path, "."))
			}
		}
		for _, r := range strs(m["Resource"]) {
			if r == "*" && !exceptions[strings.Join(path, ".")] {
				t.Errorf("%s: Resource \"*\"", strings.Join(path, "."))
			}
		}
	})
}

func TestOutputs(t *testing.T) {
	tmpl := loadTemplate(t)
	want := map[string]any{
		"ApiUrl":             sub("https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/"),
		"BucketName":         ref("DataBucket"),
		"QueueUrl":           ref("GroupsQueue"),
		"DeadLetterQueueUrl": ref("DeadLetterQueue"),
		"JobsTableName":      ref("JobsTable"),
		"DomainsTableName":   ref("DomainsTable"),
	}
	for name, w := range want {
		if got := dig(tmpl, "Outputs", name, "Value"); !reflect.DeepEqual(got, w) {
			t.Errorf("output %s = %#v, want %#v", name, got, w)
		}
	}
}

// aslPath is the scan state machine's definition relative to this package.
var aslPath = "scan.asl.json"

// aslResources returns every Task state's Resource in the ASL definition at
// path, by state name (nested Parallel/Map states included).
func aslResources(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var def any
	if err := json.Unmarshal(b, &def); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	out := map[string]string{}
	walk(def, nil, func(p []string, v any) {
		m, ok := v.(map[string]any)
		if !ok || m["Type"] != "Task" || len(p) < 2 || p[len(p)-2] != "States" {
			return
		}
		r, _ := m["Resource"].(string)
		out[p[len(p)-1]] = r
	})
	return out
}

func TestScanStateMachine(t *testing.T) {
	tmpl := loadTemplate(t)
	sm := resource(t, tmpl, "ScanStateMachine")
	if got := sm["DefinitionUri"]; got != "infra/scan.asl.json" {
		t.Errorf("DefinitionUri = %#v, want infra/scan.asl.json", got)
	}
	if sm["Definition"] != nil {
		t.Errorf("ScanStateMachine has an inline Definition as well as DefinitionUri")
	}
	subs, _ := sm["DefinitionSubstitutions"].(map[string]any)
	resources, _ := tmpl["Resources"].(map[string]any)
	// Every Task resource is exactly "${Var}" with Var substituted by the
	// Arn of a function of the template.
	tasks := aslResources(t, aslPath)
	if len(tasks) < 5 {
		t.Fatalf("found %d Task states in %s, want at least 5 (start, status, diff, notify, fail)", len(tasks), aslPath)
	}
	invoked := map[string]bool{}
	for state, r := range tasks {
		m := regexp.MustCompile(`^\$\{([A-Za-z0-9]+)\}$`).FindStringSubmatch(r)
		if m == nil {
			t.Errorf("state %s: Resource %q is not a single ${Substitution}", state, r)
			continue
		}
		v, ok := subs[m[1]]
		if !ok {
			t.Errorf("state %s: ${%s} is not in DefinitionSubstitutions", state, m[1])
			continue
		}
		fn, _ := dig(v, "Fn::GetAtt", "0").(string)
		if dig(v, "Fn::GetAtt", "1") != "Arn" || dig(resources, fn, "Type") != "AWS::Serverless::Function" {
			t.Errorf("state %s: ${%s} = %#v, want !GetAtt <function>.Arn", state, m[1], v)
			continue
		}
		invoked[fn] = true
	}
	// The state machine may invoke exactly those functions, nothing else.
	var grants, want []string
	pols, _ := sm["Policies"].([]any)
	for _, p := range pols {
		for _, s := range statements(p) {
			for _, a := range strs(s["Action"]) {
				grants = append(grants, a+" on "+resourceKey(s["Resource"]))
			}
		}
	}
	for fn := range invoked {
		want = append(want, "lambda:InvokeFunction on "+fn+".Arn")
	}
	sort.Strings(grants)
	sort.Strings(want)
	if !slices.Equal(grants, want) {
		t.Errorf("ScanStateMachine grants %q, want %q", grants, want)
	}
	if !invoked["ScanFunction"] {
		t.Errorf("no task invokes ScanFunction")
	}
	// The function publishes to the topic it is told about.
	if got := dig(function(t, tmpl, "ScanFunction"), "Environment", "Variables", scan.EnvTopic); !reflect.DeepEqual(got, ref("ScanTopic")) {
		t.Errorf("ScanFunction %s = %#v, want !Ref ScanTopic", scan.EnvTopic, got)
	}
}

func TestScanSchedule(t *testing.T) {
	tmpl := loadTemplate(t)
	for id, cond := range map[string]string{"ScanScheduleEntry": "HasScanList", "ScanScheduleRole": "HasScanList",
		"ScanEmailSubscription": "HasScanEmail"} {
		if got := dig(tmpl, "Resources", id, "Condition"); got != cond {
			t.Errorf("%s Condition = %v, want %s", id, got, cond)
		}
	}
	conds := map[string]any{
		"HasScanList":  map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{ref("ScanListKey"), ""}}}},
		"HasScanEmail": map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{ref("ScanEmail"), ""}}}},
	}
	for c, w := range conds {
		if got := dig(tmpl, "Conditions", c); !reflect.DeepEqual(got, w) {
			t.Errorf("condition %s = %#v, want %#v", c, got, w)
		}
	}
	checks := []struct {
		res  string
		path []string
		want any
	}{
		{"ScanScheduleEntry", []string{"ScheduleExpression"}, ref("ScanSchedule")},
		{"ScanScheduleEntry", []string{"FlexibleTimeWindow", "Mode"}, "OFF"},
		{"ScanScheduleEntry", []string{"Target", "Arn"}, ref("ScanStateMachine")},
		{"ScanScheduleEntry", []string{"Target", "RoleArn"}, getAtt("ScanScheduleRole", "Arn")},
		{"ScanScheduleEntry", []string{"Target", "Input"}, sub(`{"name":"${ScanName}","list_key":"${ScanListKey}"}`)},
		{"ScanScheduleRole", []string{"AssumeRolePolicyDocument", "Statement", "0", "Principal", "Service"}, "scheduler.amazonaws.com"},
		{"ScanScheduleRole", []string{"Policies", "0", "PolicyDocument", "Statement"}, []any{map[string]any{
			"Effect": "Allow", "Action": "states:StartExecution", "Resource": ref("ScanStateMachine")}}},
		{"ScanEmailSubscription", []string{"TopicArn"}, ref("ScanTopic")},
		{"ScanEmailSubscription", []string{"Protocol"}, "email"},
		{"ScanEmailSubscription", []string{"Endpoint"}, ref("ScanEmail")},
	}
	for _, c := range checks {
		if got := dig(resource(t, tmpl, c.res), c.path...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s.%s = %#v, want %#v", c.res, strings.Join(c.path, "."), got, c.want)
		}
	}
	// The parameters' patterns keep the schedule's input valid JSON and the
	// name usable by pkg/scan.
	namePat, _ := dig(tmpl, "Parameters", "ScanName", "AllowedPattern").(string)
	keyPat, _ := dig(tmpl, "Parameters", "ScanListKey", "AllowedPattern").(string)
	for _, tc := range []struct {
		name, key string
		ok        bool
	}{
		{"nightly", "lists/site.txt", true},
		{"a", "", true},
		{"Nightly", "lists/a.txt", false},
		{"x", `lists/a".txt`, false},
		{"x", "inbox/a.txt", false},
		{strings.Repeat("a", 41), "lists/a", false},
	} {
		okName := regexp.MustCompile(namePat).MatchString(tc.name)
		okKey := regexp.MustCompile(keyPat).MatchString(tc.key)
		if okName != scan.ValidName(tc.name) {
			t.Errorf("ScanName pattern accepts %q: %v, scan.ValidName: %v", tc.name, okName, scan.ValidName(tc.name))
		}
		if got := okName && okKey; got != tc.ok {
			t.Errorf("name %q key %q accepted = %v, want %v", tc.name, tc.key, got, tc.ok)
			continue
		}
		if tc.ok {
			in := strings.NewReplacer("${ScanName}", tc.name, "${ScanListKey}", tc.key).
				Replace(`{"name":"${ScanName}","list_key":"${ScanListKey}"}`)
			var v map[string]string
			if err := json.Unmarshal([]byte(in), &v); err != nil || v["name"] != tc.name || v["list_key"] != tc.key {
				t.Errorf("schedule input %s = %v, %v", in, v, err)
			}
		}
	}
}

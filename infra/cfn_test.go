package infra

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// templatePath is template.yaml relative to this package's directory.
var templatePath = filepath.Join("..", "template.yaml")

// shortTags maps CloudFormation's YAML short-form tags to their long-form
// keys. !GetAtt and !Condition are handled apart.
var shortTags = map[string]string{
	"!Ref":         "Ref",
	"!Sub":         "Fn::Sub",
	"!If":          "Fn::If",
	"!Equals":      "Fn::Equals",
	"!Not":         "Fn::Not",
	"!And":         "Fn::And",
	"!Or":          "Fn::Or",
	"!Select":      "Fn::Select",
	"!Split":       "Fn::Split",
	"!Join":        "Fn::Join",
	"!FindInMap":   "Fn::FindInMap",
	"!ImportValue": "Fn::ImportValue",
	"!Base64":      "Fn::Base64",
	"!GetAZs":      "Fn::GetAZs",
	"!Cidr":        "Fn::Cidr",
	"!Condition":   "Condition",
}

// cfnValue converts a YAML node of a CloudFormation template into plain Go
// values (map[string]any, []any, string, int, float64, bool, nil), turning
// short-form intrinsic tags into their long forms: !Ref X becomes
// {"Ref": "X"}, !GetAtt A.B and !GetAtt [A, B] become {"Fn::GetAtt": [A, B]},
// !Sub S becomes {"Fn::Sub": S}, and so on. It returns an error for an unknown
// "!" tag or a malformed !GetAtt, naming the line.
func cfnValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return cfnValue(n.Content[0])
	case yaml.AliasNode:
		return cfnValue(n.Alias)
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		plain := *n
		plain.Tag = ""
		if n.Kind == yaml.ScalarNode {
			plain.Tag = "!!str"
		}
		inner, err := cfnValue(&plain)
		if err != nil {
			return nil, err
		}
		if n.Tag == "!GetAtt" {
			switch v := inner.(type) {
			case string:
				res, attr, ok := strings.Cut(v, ".")
				if !ok {
					return nil, fmt.Errorf("line %d: !GetAtt %q has no attribute", n.Line, v)
				}
				return map[string]any{"Fn::GetAtt": []any{res, attr}}, nil
			case []any:
				if len(v) != 2 {
					return nil, fmt.Errorf("line %d: !GetAtt list has %d elements, want 2", n.Line, len(v))
				}
				return map[string]any{"Fn::GetAtt": v}, nil
			default:
				return nil, fmt.Errorf("line %d: !GetAtt of %T", n.Line, inner)
			}
		}
		key, ok := shortTags[n.Tag]
		if !ok {
			return nil, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
		}
		return map[string]any{key: inner}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			var k string
			if err := n.Content[i].Decode(&k); err != nil {
				return nil, fmt.Errorf("line %d: key: %w", n.Content[i].Line, err)
			}
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", n.Content[i].Line, k)
			}
			v, err := cfnValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := cfnValue(c)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	default:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
}

// loadTemplate parses template.yaml into long-form plain values.
func loadTemplate(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatalf("read template: %v", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse %s: %v", templatePath, err)
	}
	v, err := cfnValue(&doc)
	if err != nil {
		t.Fatalf("convert %s: %v", templatePath, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: top level is %T, want a mapping", templatePath, v)
	}
	return m
}

// dig follows keys (map keys, or decimal indexes into lists) from v and
// returns the value found, or nil when a step is missing.
func dig(v any, path ...string) any {
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			var i int
			if _, err := fmt.Sscanf(p, "%d", &i); err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// ref returns the long form of !Ref name.
func ref(name string) map[string]any { return map[string]any{"Ref": name} }

// getAtt returns the long form of !GetAtt res.attr.
func getAtt(res, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{res, attr}}
}

// sub returns the long form of !Sub s.
func sub(s string) map[string]any { return map[string]any{"Fn::Sub": s} }

// pseudoParameters are CloudFormation's pseudo parameters, valid targets of
// Ref and ${} in Fn::Sub everywhere.
var pseudoParameters = map[string]bool{
	"AWS::AccountId": true, "AWS::NotificationARNs": true, "AWS::NoValue": true,
	"AWS::Partition": true, "AWS::Region": true, "AWS::StackId": true,
	"AWS::StackName": true, "AWS::URLSuffix": true,
}

// subVar matches ${Name} and ${Name.Attr} in an Fn::Sub string; ${!Literal}
// is an escape and does not match.
var subVar = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

// walk calls fn for every value in v, depth first, with the path of keys to
// it.
func walk(v any, path []string, fn func(path []string, v any)) {
	fn(path, v)
	switch c := v.(type) {
	case map[string]any:
		for k, e := range c {
			walk(e, append(path[:len(path):len(path)], k), fn)
		}
	case []any:
		for i, e := range c {
			walk(e, append(path[:len(path):len(path)], fmt.Sprint(i)), fn)
		}
	}
}

// TestCFNValue checks the short-tag conversion on every tag the template
// language has.
func TestCFNValue(t *testing.T) {
	tests := []struct {
		name, in string
		want     any
	}{
		{"ref", `!Ref X`, ref("X")},
		{"getatt dotted", `!GetAtt Q.Arn`, getAtt("Q", "Arn")},
		{"getatt dotted nested attr", `!GetAtt Db.Endpoint.Address`, getAtt("Db", "Endpoint.Address")},
		{"getatt list", `!GetAtt [Q, Arn]`, getAtt("Q", "Arn")},
		{"sub string", `!Sub "a-${AWS::Region}"`, sub("a-${AWS::Region}")},
		{"sub list", `!Sub ["${A}", {A: !Ref B}]`, map[string]any{"Fn::Sub": []any{"${A}", map[string]any{"A": ref("B")}}}},
		{"if", `!If [C, 1, !Ref AWS::NoValue]`, map[string]any{"Fn::If": []any{"C", 1, ref("AWS::NoValue")}}},
		{"equals not", `!Not [!Equals [!Ref P, ""]]`, map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{ref("P"), ""}}}}},
		{"and or condition", `!And [!Condition A, !Or [!Condition B, !Condition C]]`, map[string]any{"Fn::And": []any{
			map[string]any{"Condition": "A"},
			map[string]any{"Fn::Or": []any{map[string]any{"Condition": "B"}, map[string]any{"Condition": "C"}}}}}},
		{"select split", `!Select [0, !Split [",", "a,b"]]`, map[string]any{"Fn::Select": []any{0, map[string]any{"Fn::Split": []any{",", "a,b"}}}}},
		{"join", `!Join ["", [a, b]]`, map[string]any{"Fn::Join": []any{"", []any{"a", "b"}}}},
		{"findinmap", `!FindInMap [M, K, V]`, map[string]any{"Fn::FindInMap": []any{"M", "K", "V"}}},
		{"importvalue", `!ImportValue X`, map[string]any{"Fn::ImportValue": "X"}},
		{"base64", `!Base64 abc`, map[string]any{"Fn::Base64": "abc"}},
		{"getazs", `!GetAZs ""`, map[string]any{"Fn::GetAZs": ""}},
		{"tagged number stays string", `!Ref 10`, ref("10")},
		{"plain values", `{a: 1, b: true, c: [x, 2.5], d: null}`, map[string]any{"a": 1, "b": true, "c": []any{"x", 2.5}, "d": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tt.in), &n); err != nil {
				t.Fatal(err)
			}
			got, err := cfnValue(&n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cfnValue(%s) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
	for _, bad := range []string{`!Bogus x`, `!GetAtt NoDot`, `!GetAtt [A, B, C]`, "a: 1\na: 2"} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(bad), &n); err != nil {
			continue // rejected by the parser already
		}
		if _, err := cfnValue(&n); err == nil {
			t.Errorf("cfnValue(%q): no error", bad)
		}
	}
}

package awsconfig

import (
	"context"
	"path/filepath"
	"testing"
)

func TestLoadRegion(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_REGION", "eu-west-1")
	tests := []struct{ override, want string }{
		{"", "eu-west-1"},
		{"us-east-1", "us-east-1"},
	}
	for _, tc := range tests {
		cfg, err := Load(context.Background(), tc.override)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Region != tc.want {
			t.Errorf("Load(%q).Region = %q, want %q", tc.override, cfg.Region, tc.want)
		}
	}
}

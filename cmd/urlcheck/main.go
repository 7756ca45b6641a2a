// Command urlcheck checks a list of URLs politely per registrable domain and
// reports, for every line, whether it works.
//
//	urlcheck run [flags] FILE|-   check a list (text, CSV or JSON)
//	urlcheck demo [flags]         check a generated list against a simulated web on loopback
//	urlcheck serve [flags]        run the serverless pipeline locally against AWS-compatible servers
//	urlcheck diff [flags] OLD NEW compare two scans (exit 0 no changes, 1 changes, 2 error)
//	urlcheck report [flags] DIR   write DIR/report.html, one self-contained HTML report
//	urlcheck version              print the version
//	urlcheck help                 print usage
//
// Exit status: 0 when every URL is ok, 1 when any is broken, 2 on usage
// errors or an unreadable input.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `urlcheck checks URLs politely: parallel across registrable domains, paced
within each by a token bucket whose rate it learns from the hosts' answers.

Usage:
  urlcheck run [flags] FILE|-   check a list of URLs (text, CSV or JSON; - reads stdin)
  urlcheck demo [flags]         check a generated list against a simulated web on loopback
  urlcheck serve [flags]        run the serverless pipeline locally (API, drop folder, SQS checker)
  urlcheck diff [flags] OLD NEW compare two scans (result dirs): newly broken, fixed, still broken,
                                redirect/status/latency changes, added, removed (exit 0 none, 1 some)
  urlcheck report [flags] DIR   write DIR/report.html: one HTML page that opens offline (-baseline
                                DIR adds the changes since an earlier scan)
  urlcheck version              print the version
  urlcheck help [COMMAND]       print this help, or a command's flags

Results go to OUT/<job-id>/results.jsonl, results.csv and summary.json; run -baseline DIR
also writes the changes since an earlier scan to OUT/<job-id>/diff.json.
Exit status: 0 every URL ok, 1 some URL broken, 2 usage error or unreadable input.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks errors that exit with status 2.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	var broken bool
	switch args[0] {
	case "run":
		broken, err = cmdRun(ctx, args[1:], stdin, stdout, stderr)
	case "demo":
		broken, err = cmdDemo(ctx, args[1:], stdout, stderr)
	case "serve":
		broken, err = cmdServe(ctx, args[1:], stdout, stderr)
	case "diff":
		broken, err = cmdDiff(ctx, args[1:], stdout, stderr)
	case "report":
		broken, err = cmdReport(ctx, args[1:], stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, "urlcheck", version())
		return 0
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			switch args[1] {
			case "run":
				runFlags(stdout).fs.Usage()
				return 0
			case "demo":
				demoFlags(stdout).fs.Usage()
				return 0
			case "report":
				reportFlags(stdout).fs.Usage()
				return 0
			case "serve":
				serveFlags(stdout).fs.Usage()
				return 0
			case "diff":
				diffFlags(stdout).fs.Usage()
				return 0
			}
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "urlcheck: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "urlcheck:", err)
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "urlcheck:", err)
		return 2
	case broken:
		return 1
	}
	return 0
}

package report

import (
	"strconv"
	"strings"

	"github.com/urlcheck/urlcheck/pkg/diff"
)

// diffView is the template's view of a diff.Diff.
type diffView struct {
	Old, New diffMeta
	Empty    bool
	Sections []diffSection // every category, in report order
}

type diffMeta struct {
	JobID    string
	Finished string
	Total    int
	Broken   int
}

type diffSection struct {
	ID       string // HTML id, "diff-newly-broken"
	Title    string
	Hint     string // what the category means
	OldLabel string // header of the "before" column
	NewLabel string
	Note     string // header of the last column
	Bad      bool   // the category is bad news
	Table    table[diffRow]
}

type diffRow struct {
	URL    string
	Link   bool
	Domain string
	Lines  string
	Old    string
	New    string
	Note   string
}

// classStatus renders a class and status as "client_error 404".
func classStatus(class string, status int) string {
	switch {
	case class == "":
		return "—"
	case status == 0:
		return class
	default:
		return class + " " + strconv.Itoa(status)
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func buildDiff(d diff.Diff, max int) *diffView {
	v := &diffView{
		Old:   diffMeta{JobID: d.Old.JobID, Finished: formatTime(d.Old.Finished), Total: d.Old.Total, Broken: d.Old.Broken},
		New:   diffMeta{JobID: d.New.JobID, Finished: formatTime(d.New.Finished), Total: d.New.Total, Broken: d.New.Broken},
		Empty: d.Empty(),
	}
	type spec struct {
		id, title, hint string
		oldL, newL, nt  string
		bad             bool
		list            []diff.Change
		row             func(c diff.Change) (old, new, note string)
	}
	byClass := func(c diff.Change) (string, string, string) {
		return classStatus(c.OldClass, c.OldStatus), classStatus(c.NewClass, c.NewStatus), c.Error
	}
	specs := []spec{
		{"newly-broken", "Newly broken", "worked in the baseline, broken now", "Before", "Now", "Error", true, d.NewlyBroken, byClass},
		{"fixed", "Fixed", "broken in the baseline, working now", "Before", "Now", "Final URL", false, d.Fixed,
			func(c diff.Change) (string, string, string) {
				return classStatus(c.OldClass, c.OldStatus), classStatus(c.NewClass, c.NewStatus), orDash(c.NewFinal)
			}},
		{"redirect-changed", "Redirect target changed", "works in both scans, ends at another URL", "Final URL before", "Final URL now", "Status", true, d.RedirectChanged,
			func(c diff.Change) (string, string, string) {
				return orDash(c.OldFinal), orDash(c.NewFinal), classStatus(c.NewClass, c.NewStatus)
			}},
		{"status-changed", "Status changed", "same class, another status code", "Before", "Now", "", false, d.StatusChanged,
			func(c diff.Change) (string, string, string) {
				return classStatus(c.OldClass, c.OldStatus), classStatus(c.NewClass, c.NewStatus), ""
			}},
		{"slower", "Slower", "latency regressions of URLs that work in both scans", "Latency before", "Latency now", "", true, d.SlowerLatency,
			func(c diff.Change) (string, string, string) {
				return formatMS(c.OldLatencyMS), formatMS(c.NewLatencyMS), ""
			}},
		{"added", "Added", "URLs only in the new list", "Before", "Now", "Error", false, d.Added, byClass},
		{"removed", "Removed", "URLs only in the baseline list", "Before", "Now", "", false, d.Removed,
			func(c diff.Change) (string, string, string) {
				return classStatus(c.OldClass, c.OldStatus), "—", ""
			}},
		{"still-broken", "Still broken", "broken in both scans", "Before", "Now", "Broken since", true, d.StillBroken,
			func(c diff.Change) (string, string, string) {
				return classStatus(c.OldClass, c.OldStatus), classStatus(c.NewClass, c.NewStatus), formatTime(c.Since)
			}},
	}
	for _, sp := range specs {
		sec := diffSection{ID: "diff-" + sp.id, Title: sp.title, Hint: sp.hint, OldLabel: sp.oldL, NewLabel: sp.newL,
			Note: sp.nt, Bad: sp.bad, Table: table[diffRow]{Total: len(sp.list)}}
		for _, c := range sp.list[:min(len(sp.list), max)] {
			o, n, note := sp.row(c)
			sec.Table.Rows = append(sec.Table.Rows, diffRow{URL: c.URL, Link: isWebURL(c.URL), Domain: c.Domain,
				Lines: joinLines(c.Lines), Old: o, New: n, Note: note})
		}
		v.Sections = append(v.Sections, sec)
	}
	return v
}

// joinLines renders line numbers as "3, 17, 40", eliding after 5.
func joinLines(lines []int) string {
	const show = 5
	parts := make([]string, 0, min(len(lines), show)+1)
	for i, l := range lines {
		if i == show {
			parts = append(parts, "… +"+strconv.Itoa(len(lines)-show))
			break
		}
		parts = append(parts, strconv.Itoa(l))
	}
	return strings.Join(parts, ", ")
}

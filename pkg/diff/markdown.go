package diff

import (
	"fmt"
	"strconv"
	"strings"
)

// section is one list of a Diff as Markdown shows it.
type section struct {
	title string // heading, also the headline's label
	list  []Change
	item  func(Change) string // the text after the URL and lines
}

// sections returns d's lists in report order: newly broken first, still
// broken last.
func (d Diff) sections() []section {
	return []section{
		{"newly broken", d.NewlyBroken, func(c Change) string {
			return transition(c) + errText(c.Error)
		}},
		{"fixed", d.Fixed, transition},
		{"redirect changed", d.RedirectChanged, func(c Change) string {
			return finalText(c.OldFinal) + " → " + finalText(c.NewFinal)
		}},
		{"status changed", d.StatusChanged, transition},
		{"slower", d.SlowerLatency, func(c Change) string {
			return fmt.Sprintf("%s → %s", ms(c.OldLatencyMS), ms(c.NewLatencyMS))
		}},
		{"added", d.Added, func(c Change) string {
			return classText(c.NewClass, c.NewStatus) + errText(c.Error)
		}},
		{"removed", d.Removed, func(c Change) string {
			return "was " + classText(c.OldClass, c.OldStatus)
		}},
		{"still broken", d.StillBroken, func(c Change) string {
			s := classText(c.NewClass, c.NewStatus)
			if !c.Since.IsZero() {
				s += " since " + c.Since.UTC().Format("2006-01-02 15:04 UTC")
			}
			return s + errText(c.Error)
		}},
	}
}

// Markdown renders d as short Markdown for notifications: a bold headline
// with the non-zero counts (or "no changes"), a line describing both scans,
// then one section per non-empty list (newly broken first, still broken
// last) with at most max items each and a "… N more" line for the rest.
// max < 0 lists every item; max == 0 prints the headline and scan lines
// only. URLs and error texts are set in code spans so that Markdown does
// not mangle them. The text ends with a newline.
func (d Diff) Markdown(max int) string {
	var b strings.Builder
	secs := d.sections()
	var counts []string
	for _, s := range secs[:len(secs)-1] {
		if len(s.list) > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", len(s.list), s.title))
		}
	}
	head := "no changes"
	if len(counts) > 0 {
		head = strings.Join(counts, ", ")
	}
	fmt.Fprintf(&b, "**urlcheck diff: %s; %d still broken**\n", head, len(d.StillBroken))
	fmt.Fprintf(&b, "Old scan %s → new scan %s.\n", metaText(d.Old), metaText(d.New))
	if max == 0 {
		return b.String()
	}
	for _, s := range secs {
		if len(s.list) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n**%s%s (%d)**\n", strings.ToUpper(s.title[:1]), s.title[1:], len(s.list))
		n := len(s.list)
		if max > 0 && n > max {
			n = max
		}
		for _, c := range s.list[:n] {
			fmt.Fprintf(&b, "- %s%s: %s\n", code(c.URL), linesText(c.Lines), s.item(c))
		}
		if rest := len(s.list) - n; rest > 0 {
			fmt.Fprintf(&b, "- … %d more\n", rest)
		}
	}
	return b.String()
}

// metaText describes a scan: "`job` (10 lines, 2 broken)".
func metaText(m Meta) string {
	id := m.JobID
	if id == "" {
		id = "?"
	}
	return fmt.Sprintf("%s (%d lines, %d broken)", code(id), m.Total, m.Broken)
}

// transition is "old class status → new class status".
func transition(c Change) string {
	return classText(c.OldClass, c.OldStatus) + " → " + classText(c.NewClass, c.NewStatus)
}

// classText is "client_error 404", or just the class without a status.
func classText(class string, status int) string {
	if status == 0 {
		return class
	}
	return class + " " + strconv.Itoa(status)
}

// finalText shows a final URL, or "no redirect" for none.
func finalText(u string) string {
	if u == "" {
		return "no redirect"
	}
	return code(u)
}

// errText is " (`error`)" for a non-empty error, clipped to 120 bytes.
func errText(e string) string {
	e = strings.TrimSpace(e)
	if e == "" {
		return ""
	}
	if len(e) > 120 {
		e = strings.ToValidUTF8(e[:120], "") + "…"
	}
	return " (" + code(e) + ")"
}

// linesText is " line 3", " lines 3, 7" or " lines 1, 2, 3, 4, 5 +2".
func linesText(lines []int) string {
	switch len(lines) {
	case 0:
		return ""
	case 1:
		return " line " + strconv.Itoa(lines[0])
	}
	const show = 5
	parts := make([]string, 0, show)
	for _, l := range lines[:min(show, len(lines))] {
		parts = append(parts, strconv.Itoa(l))
	}
	s := " lines " + strings.Join(parts, ", ")
	if len(lines) > show {
		s += fmt.Sprintf(" +%d", len(lines)-show)
	}
	return s
}

// ms formats a latency in milliseconds: "120 ms", "1.5 s".
func ms(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
}

// code sets s in a Markdown code span, replacing backticks and newlines
// that would end or break it.
func code(s string) string {
	s = strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(s)
	return "`" + s + "`"
}

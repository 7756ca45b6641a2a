package report

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/urlcheck/urlcheck/pkg/results"
)

// chart is the geometry of the timeline SVG: requests per second of each
// timeline domain as a step polyline, its learned rate as a dashed line.
type chart struct {
	Width, Height          int
	Left, Top, Right, Base float64 // plot area: x from Left to Right, y from Top down to Base
	XTicks, YTicks         []tick
	Series                 []series
	BucketNote             string
	XLabelX, YLabelY       float64
	LegendY, TickY         float64
}

type tick struct {
	Pos   float64 // x for XTicks, y for YTicks
	Label string
}

type series struct {
	Domain     string
	Color      string
	Points     string // SVG polyline points
	HasLearned bool
	LearnedY   float64
	Learned    string
	Requests   int
	Throttled  int
	Peak       string
	LegendX    float64
	LegendY    float64
}

// seriesColors are distinguishable on white and for common colour-vision
// deficiencies (Okabe–Ito).
var seriesColors = []string{"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9"}

// buildChart lays out tls on a common time axis; nil when there is nothing
// to draw.
func buildChart(tls []results.DomainTimeline) *chart {
	var use []results.DomainTimeline
	for _, tl := range tls {
		if len(tl.Requests) > 0 && tl.BucketSeconds > 0 && !math.IsInf(tl.BucketSeconds, 0) {
			use = append(use, tl)
		}
	}
	if len(use) == 0 {
		return nil
	}
	// Time axis: seconds since the earliest Start.
	origin := use[0].Start
	for _, tl := range use[1:] {
		if tl.Start.Before(origin) {
			origin = tl.Start
		}
	}
	var spanS, maxRate float64
	for _, tl := range use {
		off := tl.Start.Sub(origin).Seconds()
		spanS = math.Max(spanS, off+float64(len(tl.Requests))*tl.BucketSeconds)
		for _, n := range tl.Requests {
			maxRate = math.Max(maxRate, float64(n)/tl.BucketSeconds)
		}
		if finite(tl.LearnedRate) {
			maxRate = math.Max(maxRate, tl.LearnedRate)
		}
	}
	ystep := niceStep(maxRate, 5)
	ymax := math.Max(ystep, math.Ceil(maxRate*1.05/ystep)*ystep)
	xstep := niceTimeStep(spanS, 8)

	const perRow = 3 // legend entries per row
	rows := (len(use) + perRow - 1) / perRow
	c := &chart{Width: 960, Height: 300 + 54 + 20*rows, Left: 64, Top: 16, Right: 940, Base: 300}
	c.XLabelX = (c.Left + c.Right) / 2
	c.YLabelY = (c.Top + c.Base) / 2
	c.LegendY = c.Base + 54
	c.TickY = c.Base + 5
	xOf := func(s float64) float64 { return round1(c.Left + (c.Right-c.Left)*s/spanS) }
	yOf := func(r float64) float64 { return round1(c.Base - (c.Base-c.Top)*r/ymax) }
	for v := 0.0; v <= spanS+1e-9; v += xstep {
		c.XTicks = append(c.XTicks, tick{Pos: xOf(v), Label: durationLabel(v)})
	}
	for v := 0.0; v <= ymax+1e-9; v += ystep {
		c.YTicks = append(c.YTicks, tick{Pos: yOf(v), Label: formatFloat(v)})
	}
	legendSlot := (c.Right - c.Left) / perRow
	bucketSet := map[float64]bool{}
	for i, tl := range use {
		bucketSet[tl.BucketSeconds] = true
		off := tl.Start.Sub(origin).Seconds()
		var pts strings.Builder
		s := series{Domain: tl.Domain, Color: seriesColors[i%len(seriesColors)],
			LegendX: round1(c.Left + float64(i%perRow)*legendSlot), LegendY: c.LegendY + float64(20*(i/perRow))}
		peak := 0.0
		for j, n := range tl.Requests {
			r := float64(n) / tl.BucketSeconds
			peak = math.Max(peak, r)
			x0, x1, y := xOf(off+float64(j)*tl.BucketSeconds), xOf(off+float64(j+1)*tl.BucketSeconds), yOf(r)
			pts.WriteString(fmtPt(x0, y))
			pts.WriteString(fmtPt(x1, y))
			s.Requests += n
		}
		for _, n := range tl.Throttled {
			s.Throttled += n
		}
		s.Points = strings.TrimSpace(pts.String())
		s.Peak = formatFloat(peak) + "/s"
		if finite(tl.LearnedRate) && tl.LearnedRate > 0 {
			s.HasLearned, s.LearnedY, s.Learned = true, yOf(tl.LearnedRate), formatFloat(tl.LearnedRate)+"/s"
		}
		c.Series = append(c.Series, s)
	}
	if len(bucketSet) == 1 {
		c.BucketNote = "requests per " + durationLabel(use[0].BucketSeconds) + " bucket, shown as requests/s"
	} else {
		c.BucketNote = "requests per bucket, shown as requests/s"
	}
	return c
}

func fmtPt(x, y float64) string {
	return strconv.FormatFloat(x, 'f', -1, 64) + "," + strconv.FormatFloat(y, 'f', -1, 64) + " "
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// niceStep returns a 1, 2 or 5 × 10^k step that divides [0, max] into at
// most about n intervals; 1 for max <= 0.
func niceStep(max float64, n int) float64 {
	if !(max > 0) || !finite(max) {
		return 1
	}
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// niceTimeStep returns a tick interval in seconds that reads well on a clock
// (1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 h, days)
// and splits spanS into at most about n intervals.
func niceTimeStep(spanS float64, n int) float64 {
	steps := []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400}
	raw := spanS / float64(n)
	for _, s := range steps {
		if s >= raw {
			return s
		}
	}
	return math.Ceil(raw/86400) * 86400
}

// durationLabel renders seconds as "0", "45s", "2m", "1m30s", "1h", "1h5m".
func durationLabel(s float64) string {
	if s == 0 {
		return "0"
	}
	d := time.Duration(math.Round(s*1000)) * time.Millisecond
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}

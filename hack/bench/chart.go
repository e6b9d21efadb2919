package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var (
	blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	orange = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	green  = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	red    = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	grey   = color.RGBA{R: 120, G: 120, B: 120, A: 255}
)

// stepXYs turns a curve into a count-over-time step line that starts at 0
// and is held until end.
func stepXYs(c curve, end time.Duration) plotter.XYs {
	xys := plotter.XYs{{X: 0, Y: 0}}
	for i, d := range c {
		xys = append(xys, plotter.XY{X: d.Seconds(), Y: float64(i)}, plotter.XY{X: d.Seconds(), Y: float64(i + 1)})
	}
	if end.Seconds() > xys[len(xys)-1].X {
		xys = append(xys, plotter.XY{X: end.Seconds(), Y: float64(len(c))})
	}
	return xys
}

func addLine(p *plot.Plot, xys plotter.XYs, c color.Color, width vg.Length, dashes []vg.Length, label string) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = width
	l.Dashes = dashes
	p.Add(l)
	if label != "" {
		p.Legend.Add(label, l)
	}
	return nil
}

func newPlot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "seconds since the first Database create"
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(4)
	p.Legend.YOffs = vg.Points(4)
	return p
}

// writeChart draws three panels sharing the time axis: Databases Running
// (controller against floor, with their StatefulSets ready), the
// controller's memory, and its workqueue depth.
func writeChart(path string, c config, fr *floorRun, cr *controllerRun) error {
	end := cr.steadyEnd
	if fr.allRunning > end {
		end = fr.allRunning
	}
	xmax := end.Seconds() * 1.02

	running := newPlot(fmt.Sprintf("%d Databases: Running over time, controller against floor", c.n), "count")
	running.Legend.Top = false
	running.Legend.Left = false
	dash := []vg.Length{vg.Points(5), vg.Points(3)}
	for _, l := range []struct {
		c      curve
		end    time.Duration
		color  color.Color
		width  vg.Length
		dashes []vg.Length
		label  string
	}{
		{fr.stsReady, fr.allRunning, orange, vg.Points(1), dash, "floor: StatefulSets ready"},
		{cr.stsReady, end, blue, vg.Points(1), dash, "controller: StatefulSets ready"},
		{fr.running, fr.allRunning, orange, vg.Points(2.5), nil, "floor: Databases Running (" + secs(fr.allRunning) + ")"},
		{cr.running, end, blue, vg.Points(2.5), nil, "controller: Databases Running (" + secs(cr.allRunning) + ")"},
	} {
		if err := addLine(running, stepXYs(l.c, l.end), l.color, l.width, l.dashes, l.label); err != nil {
			return err
		}
	}
	running.Y.Min, running.Y.Max = 0, float64(c.n)*1.05
	running.X.Min, running.X.Max = 0, xmax

	var rss, heap, depth plotter.XYs
	for _, s := range cr.samples {
		x := s.at.Sub(cr.t0).Seconds()
		if x < 0 {
			continue
		}
		rss = append(rss, plotter.XY{X: x, Y: s.rss / mib})
		heap = append(heap, plotter.XY{X: x, Y: s.heapAlloc / mib})
		depth = append(depth, plotter.XY{X: x, Y: s.depth})
	}
	mem := newPlot("controller memory", "MiB")
	mem.Legend.Top, mem.Legend.Left = true, true
	mem.Legend.XOffs = vg.Points(8)
	mem.Legend.YOffs = -vg.Points(4)
	budget := rssBudget(c.n) / mib
	target := plotter.XYs{{X: 0, Y: budget}, {X: xmax, Y: budget}}
	if err := addLine(mem, target, red, vg.Points(1), dash, fmt.Sprintf("target: RSS at most %.0f MiB", budget)); err != nil {
		return err
	}
	if len(rss) > 0 {
		if err := addLine(mem, rss, green, vg.Points(2), nil, "RSS (process_resident_memory_bytes)"); err != nil {
			return err
		}
		if err := addLine(mem, heap, grey, vg.Points(2), nil, "Go heap (go_memstats_heap_alloc_bytes)"); err != nil {
			return err
		}
	}
	mem.Y.Min = 0
	// Room above the target line for the legend.
	mem.Y.Max = math.Max(mem.Y.Max*1.1, budget*1.4)
	mem.X.Min, mem.X.Max = 0, xmax

	queue := newPlot("controller workqueue depth", "Databases queued")
	if len(depth) > 0 {
		if err := addLine(queue, depth, blue, vg.Points(1.5), nil, "workqueue_depth{name=\"databases\"}"); err != nil {
			return err
		}
	}
	queue.Y.Min = 0
	queue.X.Min, queue.X.Max = 0, xmax
	queue.Legend.Top = true

	const w, h = 12 * vg.Inch, 13 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(100))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 3, Cols: 1, PadTop: vg.Points(8), PadBottom: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(16), PadY: vg.Points(20)}
	plots := [][]*plot.Plot{{running}, {mem}, {queue}}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// plainTicks are gonum's default ticks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}

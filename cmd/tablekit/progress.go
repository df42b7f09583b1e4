package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/tablekit/tablekit/transfer"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// progressFlags choose how progress is shown.
type progressFlags struct {
	mode string
}

func (f *progressFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.mode, "progress", "auto", "progress on stderr: auto (a bar on a terminal, else lines), bar, lines or none")
}

// display shows transfer.Progress reports on stderr.
type display struct {
	w     io.Writer
	label string // what the lines and the bar are labelled with
	bar   *progressbar.ProgressBar
	last  time.Time
	// every is the time between plain lines.
	every time.Duration
}

// newDisplay returns the progress display the flags and stderr ask for,
// or nil for none; label names the command ("count", "purge --dry-run").
func newDisplay(e *env, f *progressFlags, label string) (*display, error) {
	mode := f.mode
	switch mode {
	case "auto":
		mode = "lines"
		if e.stderrTerminal {
			mode = "bar"
		}
	case "bar", "lines":
	case "none":
		return nil, nil
	default:
		return nil, usagef("--progress must be auto, bar, lines or none, not %q", f.mode)
	}
	d := &display{w: e.stderr, label: label, every: 5 * time.Second}
	if mode == "bar" {
		d.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(e.stderr),
			progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("entities"),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionFullWidth(),
			progressbar.OptionSetRenderBlankState(true),
		)
	}
	return d, nil
}

// callback returns the OnProgress function, or nil without a display.
func (d *display) callback() func(transfer.Progress) {
	if d == nil {
		return nil
	}
	return d.show
}

// count picks the number the bar counts: written for writers, read for
// readers.
func count(p transfer.Progress) int64 {
	switch p.Op {
	case "export", "count":
		return p.Read
	}
	return p.Written + p.Failed + p.Skipped
}

func (d *display) show(p transfer.Progress) {
	if d.bar != nil {
		if p.Total >= 0 && d.bar.GetMax64() != p.Total {
			d.bar.ChangeMax64(p.Total)
		}
		d.bar.Describe(fmt.Sprintf("%s: %d tx, %s", d.label, p.Transactions, ranges(p)))
		d.bar.Set64(count(p))
		if p.Done {
			d.bar.Finish()
			fmt.Fprintln(d.w)
		}
		return
	}
	if !p.Done && time.Since(d.last) < d.every {
		return
	}
	d.last = time.Now()
	fmt.Fprintln(d.w, line(d.label, p))
}

func ranges(p transfer.Progress) string {
	if p.Ranges == 0 {
		return fmt.Sprintf("%d bytes", p.Bytes)
	}
	return fmt.Sprintf("%d/%d ranges", p.RangesDone, p.Ranges)
}

// line is the plain-text form of a report, labelled label, in the words
// of its operation: a count counts, an export exports, a purge lists and
// deletes; an import's entities read and not yet written are pending
// (its writes are counted as each batch of --batch entities completes).
func line(label string, p transfer.Progress) string {
	s := label + ": "
	switch p.Op {
	case "count":
		s += fmt.Sprintf("counted %d", p.Read)
	case "export":
		s += fmt.Sprintf("exported %d", p.Written)
	case "purge":
		s += fmt.Sprintf("listed %d, deleted %d", p.Read, p.Written)
	default:
		s += fmt.Sprintf("read %d, written %d", p.Read, p.Written)
	}
	if p.Failed > 0 {
		s += fmt.Sprintf(", failed %d", p.Failed)
	}
	if pending := p.Read - p.Written - p.Failed; p.Op == "import" && pending > 0 && !p.Done {
		s += fmt.Sprintf(", pending %d", pending)
	}
	if p.Skipped > 0 {
		s += fmt.Sprintf(", left alone %d", p.Skipped)
	}
	s += fmt.Sprintf(", %d transactions, %.0f entities/s, %s", p.Transactions, p.Rate, ranges(p))
	if p.Remaining >= 0 && !p.Done {
		s += fmt.Sprintf(", about %s left", p.Remaining.Round(time.Second))
	}
	s += fmt.Sprintf(", %s", p.Elapsed.Round(100*time.Millisecond))
	if p.Done {
		s += " (end)"
	}
	return s
}

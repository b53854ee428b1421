package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
)

// RecordingIndex is the index.json of a recording directory.
type RecordingIndex struct {
	StartedAt  time.Time        `json:"started_at"`
	StoppedAt  time.Time        `json:"stopped_at"`
	FrameCount int              `json:"frame_count"`
	Frames     []RecordingFrame `json:"frames"`
}

// RecordingFrame is one saved screencast frame.
type RecordingFrame struct {
	File string `json:"file"`
	// Timestamp is when the frame was produced (Unix seconds).
	Timestamp float64 `json:"timestamp"`
	// OffsetMS is the time since the recording started.
	OffsetMS int64  `json:"offset_ms"`
	URL      string `json:"url"`
	TabID    string `json:"tab_id"`
}

// recording is a screencast of the current tab in progress; it follows the
// current tab when it changes.
type recording struct {
	dir   string
	start time.Time

	mu     sync.Mutex
	frames []RecordingFrame
	err    error

	tab    *tab
	cancel context.CancelFunc
	done   chan struct{}
}

const screencastQuality = 80

func (b *Browser) startRecording(o *op) (result, error) {
	if b.rec != nil {
		return result{}, userErrorf("A recording is already in progress (saving to %s). Call browser_stop_recording first.", b.rec.dir)
	}
	if b.saveDir == "" {
		dir := b.opts.SaveDir
		if dir == "" {
			d, err := os.MkdirTemp("", "acs-browser-save-")
			if err != nil {
				return result{}, fmt.Errorf("create save directory: %w", err)
			}
			dir = d
			b.ownSaveDir = true
		}
		b.saveDir = dir
	}
	if err := os.MkdirAll(b.saveDir, 0o755); err != nil {
		return result{}, fmt.Errorf("create save directory: %w", err)
	}
	b.recSeq++
	dir := filepath.Join(b.saveDir, fmt.Sprintf("recording-%s-%d", time.Now().UTC().Format("20060102-150405"), b.recSeq))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return result{}, fmt.Errorf("create recording directory: %w", err)
	}
	r := &recording{dir: dir, start: time.Now()}
	if err := r.moveTo(o, b.cur); err != nil {
		return result{}, err
	}
	b.rec = r
	return result{text: fmt.Sprintf("Started recording the browser session (frames are saved in %s). Call browser_stop_recording to finish.", dir)}, nil
}

func (b *Browser) stopRecording(o *op) (result, error) {
	r := b.rec
	if r == nil {
		return result{}, userErrorf("No recording is in progress. Call browser_start_recording first.")
	}
	b.rec = nil
	if t := b.cur; t != nil && t.ctx != nil {
		// One last frame with the final state of the page, so that even a
		// session without visible change has a frame.
		c, cancel := o.on(t.ctx)
		q := int64(screencastQuality)
		res, err := cdp.Call(c, t.target(), page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatJpeg, Quality: &q})
		cancel()
		if err == nil {
			r.save(res.Data, float64(time.Now().UnixNano())/1e9, t.tr.currentURL(), t.short)
		}
	}
	r.detach()
	r.mu.Lock()
	idx := RecordingIndex{StartedAt: r.start.UTC(), StoppedAt: time.Now().UTC(), FrameCount: len(r.frames), Frames: r.frames}
	if idx.Frames == nil {
		idx.Frames = []RecordingFrame{}
	}
	werr := r.err
	r.mu.Unlock()
	j, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return result{}, err
	}
	if err := os.WriteFile(filepath.Join(r.dir, "index.json"), j, 0o644); err != nil {
		return result{}, fmt.Errorf("write recording index: %w", err)
	}
	text := fmt.Sprintf("Stopped recording: %d frames saved in %s (see index.json there for their timestamps and URLs).", idx.FrameCount, r.dir)
	if werr != nil {
		text += fmt.Sprintf("\nWarning: some frames could not be saved: %v", werr)
	}
	dir := r.dir
	return result{text: text, saveDir: &dir}, nil
}

// moveTo stops the screencast on the tab it runs on (if any) and starts it
// on t.
func (r *recording) moveTo(o *op, t *tab) error {
	r.detach()
	tgt := t.target()
	ctx, cancel := context.WithCancel(t.ctx)
	frames := cdp.Events(ctx, tgt, page.ScreencastFrame)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range frames {
			if err != nil {
				return
			}
			ts := float64(time.Now().UnixNano()) / 1e9
			if ev.Metadata != nil && ev.Metadata.Timestamp > 0 {
				ts = float64(ev.Metadata.Timestamp)
			}
			r.save(ev.Data, ts, t.tr.currentURL(), t.short)
			_, _ = cdp.Call(ctx, tgt, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: ev.SessionID})
		}
	}()
	q := int64(screencastQuality)
	c, ccancel := o.on(ctx)
	_, err := cdp.Call(c, tgt, page.StartScreencast, page.StartScreencastParams{
		Format: page.StartScreencastFormatJpeg, Quality: &q, MaxWidth: 1920, MaxHeight: 1080, EveryNthFrame: 1,
	})
	ccancel()
	if err != nil {
		cancel()
		<-done
		return fmt.Errorf("start screencast: %w", err)
	}
	r.tab, r.cancel, r.done = t, cancel, done
	return nil
}

// detach stops the screencast on its tab and waits for the frame loop.
func (r *recording) detach() {
	if r.tab == nil {
		return
	}
	if r.tab.ctx != nil && r.tab.ctx.Err() == nil {
		c, cancel := context.WithTimeout(r.tab.ctx, 2*time.Second)
		_, _ = cdp.Call(c, r.tab.target(), page.StopScreencast, cdp.Empty{})
		cancel()
	}
	r.cancel()
	<-r.done
	r.tab, r.cancel, r.done = nil, nil, nil
}

func (r *recording) save(data []byte, ts float64, url, tabID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := fmt.Sprintf("frame-%06d.jpg", len(r.frames)+1)
	if err := os.WriteFile(filepath.Join(r.dir, name), data, 0o644); err != nil {
		if r.err == nil {
			r.err = err
		}
		return
	}
	off := int64(ts*1000) - r.start.UnixMilli()
	if off < 0 {
		off = 0
	}
	r.frames = append(r.frames, RecordingFrame{File: name, Timestamp: ts, OffsetMS: off, URL: url, TabID: tabID})
}

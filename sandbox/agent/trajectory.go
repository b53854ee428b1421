package agent

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/llm"
)

// trajectoryChunk is how many events WriteTrajectory reads at a time.
const trajectoryChunk = 100

// WriteTrajectory writes the conversation's persisted record as a zip
// archive to w, with every secret masked:
//
//	meta.json                         what it was created with (the start
//	                                  request, title, tags, fork origin); every
//	                                  secret field (secret values, lookup
//	                                  headers, LLM credentials) is "**********"
//	state.json                        its runtime state (status, stats, ...)
//	events/event-00000-<id>.json      each event, in log order
//
// Every JSON string of every entry also passes through the conversation's
// masker (mask, when not nil, is applied after it: the server's own
// masker), so a secret value written into a message or an observation is
// <secret-hidden>. The events are those logged when WriteTrajectory began.
// It returns the first error reading the log or writing w (ctx ending
// included); w then holds a partial archive.
func (c *Conversation) WriteTrajectory(ctx context.Context, w io.Writer, mask func([]byte) []byte) error {
	var (
		mb, sb     []byte
		merr, serr error
		n          int
	)
	c.do(func() {
		m := c.meta
		m.Request, _ = mapSecretFields(m.Request, func(string, string) (string, error) { return llm.Redacted, nil })
		m.SecretScheme = schemeRedacted
		mb, merr = strictjson.Marshal(&m)
		sb, serr = strictjson.Marshal(&c.st)
		n = c.log.Len()
	})
	if merr != nil {
		return fmt.Errorf("trajectory: encode meta: %w", merr)
	}
	if serr != nil {
		return fmt.Errorf("trajectory: encode state: %w", serr)
	}
	clean := func(b []byte) []byte {
		b = maskJSON(c.masker.Contains, c.masker.MaskBytes, c.masker.MaskJSONStrings, b)
		if mask != nil {
			b = mask(b)
		}
		return b
	}
	zw := zip.NewWriter(w)
	put := func(name string, b []byte) error {
		f, err := zw.Create(name)
		if err != nil {
			return fmt.Errorf("trajectory: add %s: %w", name, err)
		}
		if _, err := f.Write(clean(b)); err != nil {
			return fmt.Errorf("trajectory: write %s: %w", name, err)
		}
		return nil
	}
	if err := put(metaFile, mb); err != nil {
		return err
	}
	if err := put(stateFile, sb); err != nil {
		return err
	}
	for i := 0; i < n; i += trajectoryChunk {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("trajectory: %w", err)
		}
		evs, err := c.log.ReadFrom(i, min(trajectoryChunk, n-i))
		if err != nil {
			return fmt.Errorf("trajectory: read events from %d: %w", i, err)
		}
		for j, b := range evs {
			id := ""
			if v, err := strictjson.Parse(b); err == nil {
				if idv, ok := v.Get("id"); ok {
					id = idv.Str
				}
			}
			if err := put(fmt.Sprintf("events/event-%05d-%s.json", i+j, safeName(id)), b); err != nil {
				return err
			}
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("trajectory: finish the archive: %w", err)
	}
	return nil
}

// maskJSON masks the secret values in the JSON document b: untouched when
// it holds none, masked byte for byte when that leaves valid JSON (a value
// inside strings), else string by string.
func maskJSON(contains func([]byte) bool, maskBytes, maskStrings func([]byte) []byte, b []byte) []byte {
	if !contains(b) {
		return b
	}
	if m := maskBytes(b); json.Valid(m) {
		return m
	}
	return maskStrings(b)
}

// safeName keeps the characters of an event id that are safe in a file
// name (event ids are arbitrary strings).
func safeName(id string) string {
	out := make([]byte, 0, len(id))
	for i := 0; i < len(id) && len(out) < 64; i++ {
		ch := id[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' {
			out = append(out, ch)
		}
	}
	return string(out)
}

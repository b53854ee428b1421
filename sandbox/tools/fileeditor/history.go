package fileeditor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// history is the on-disk undo store. Each edited file (keyed by its resolved
// real path) owns one sub-directory of dir, named after a hash of the path.
// Entries are files named by a zero-padded, increasing sequence number; the
// highest number is the most recent entry. A "path" file records which file
// the sub-directory belongs to, for humans inspecting the directory.
type history struct {
	dir string
	max int
}

const seqDigits = 20

func (h *history) keyDir(real string) string {
	sum := sha256.Sum256([]byte(real))
	return filepath.Join(h.dir, hex.EncodeToString(sum[:16]))
}

// entries returns the sequence numbers stored for real, oldest first.
func (h *history) entries(real string) ([]uint64, error) {
	des, err := os.ReadDir(h.keyDir(real))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fileeditor: reading history: %w", err)
	}
	var seqs []uint64
	for _, de := range des {
		name := de.Name()
		if len(name) != seqDigits || !de.Type().IsRegular() {
			continue
		}
		n, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			continue
		}
		seqs = append(seqs, n)
	}
	slices.Sort(seqs)
	return seqs, nil
}

func (h *history) entryPath(real string, seq uint64) string {
	return filepath.Join(h.keyDir(real), fmt.Sprintf("%0*d", seqDigits, seq))
}

// push stores content as the newest entry for real and returns its sequence
// number. It does not drop old entries; call trim once the edit succeeded.
func (h *history) push(real, content string) (uint64, error) {
	kd := h.keyDir(real)
	if err := os.MkdirAll(kd, 0o700); err != nil {
		return 0, fmt.Errorf("fileeditor: creating history directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(kd, "path"), []byte(real+"\n"), 0o600); err != nil {
		return 0, fmt.Errorf("fileeditor: writing history: %w", err)
	}
	seqs, err := h.entries(real)
	if err != nil {
		return 0, err
	}
	var seq uint64 = 1
	if len(seqs) > 0 {
		seq = seqs[len(seqs)-1] + 1
	}
	if err := writeFileAtomic(h.entryPath(real, seq), content, 0o600, false); err != nil {
		return 0, fmt.Errorf("fileeditor: writing history: %w", err)
	}
	return seq, nil
}

// trim drops the oldest entries of real beyond the configured maximum.
func (h *history) trim(real string) error {
	seqs, err := h.entries(real)
	if err != nil {
		return err
	}
	for len(seqs) > h.max {
		if err := h.remove(real, seqs[0]); err != nil {
			return err
		}
		seqs = seqs[1:]
	}
	return nil
}

// last returns the newest entry of real; ok is false when there is none.
func (h *history) last(real string) (content string, seq uint64, ok bool, err error) {
	seqs, err := h.entries(real)
	if err != nil || len(seqs) == 0 {
		return "", 0, false, err
	}
	seq = seqs[len(seqs)-1]
	data, err := os.ReadFile(h.entryPath(real, seq))
	if err != nil {
		return "", 0, false, fmt.Errorf("fileeditor: reading history: %w", err)
	}
	return string(data), seq, true, nil
}

// remove deletes one entry of real.
func (h *history) remove(real string, seq uint64) error {
	if err := os.Remove(h.entryPath(real, seq)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fileeditor: removing history entry: %w", err)
	}
	return nil
}

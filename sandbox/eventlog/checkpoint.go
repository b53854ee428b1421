package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/atomicfile"
)

// CheckpointName is the file, beside the log, holding a checkpoint of the
// log's in-memory index (what searches need of every event up to some
// offset), so that reopening a long log reads the checkpoint and scans only
// the records after it instead of parsing every record.
//
// A checkpoint is written atomically (temporary file, fsync, rename) in the
// background once 4096 events or 8 MiB were appended since the last one (a
// 32nd of the log, beyond 128k events or 256 MiB), and at Close. It only ever covers fsynced
// records, so it describes a prefix of the log. Open uses it only when it is
// intact (its own CRC-32C) and describes this log: the log is at least as
// long as the prefix it covers, and the first and last records it covers
// are in the log at the same offsets with the same length and checksum (the
// checksum is verified against the record's bytes). Anything else — no
// checkpoint, a torn, corrupt or foreign one, one from a longer log — falls
// back to the full scan, so a checkpoint never changes what Open returns,
// only how fast.
const CheckpointName = "events.idx"

// A new checkpoint is written when this many events or bytes were appended
// since the last one, or a 32nd of what the last one covers when that is
// more: reopening then scans at most about that much, and as a checkpoint
// rewrites the whole index, rewriting it only when the log grew by a fixed
// fraction keeps the bytes written per appended event bounded however long
// the log gets.
const (
	checkpointEvents = 4096
	checkpointBytes  = 8 << 20
	checkpointGrowth = 32
)

const checkpointMagic = "ACSEVIX1"

// checkpoint is a decoded checkpoint file.
type checkpoint struct {
	size     int64  // log bytes covered (end of the last covered record)
	firstSum uint32 // checksum of the first covered record
	lastSum  uint32 // checksum of the last covered record
	entries  []entry
}

// encodeCheckpoint serializes ents (at least one, a prefix of the log in
// order). Layout: magic; uvarint covered size; first and last record
// checksums (uint32 LE); a string table of kinds and sources (uvarint count,
// then uvarint length + bytes each); uvarint entry count; per entry uvarint
// payload length, varint timestamp delta, uvarint kind and source indexes,
// id and text (uvarint length + bytes); CRC-32C of all that (uint32 LE).
// Offsets are not stored: records are contiguous from offset 0.
func encodeCheckpoint(ents []entry, firstSum, lastSum uint32) []byte {
	last := ents[len(ents)-1]
	table := map[string]uint64{}
	var strs []string
	intern := func(s string) {
		if _, ok := table[s]; !ok {
			table[s] = uint64(len(strs))
			strs = append(strs, s)
		}
	}
	textBytes := 0
	for i := range ents {
		intern(ents[i].kind)
		intern(string(ents[i].source))
		textBytes += len(ents[i].id) + len(ents[i].text)
	}
	buf := make([]byte, 0, 64+len(ents)*12+textBytes)
	appendString := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	buf = append(buf, checkpointMagic...)
	buf = binary.AppendUvarint(buf, uint64(last.off+int64(last.n)))
	buf = binary.LittleEndian.AppendUint32(buf, firstSum)
	buf = binary.LittleEndian.AppendUint32(buf, lastSum)
	buf = binary.AppendUvarint(buf, uint64(len(strs)))
	for _, s := range strs {
		appendString(s)
	}
	buf = binary.AppendUvarint(buf, uint64(len(ents)))
	var prevTS int64
	for i := range ents {
		e := &ents[i]
		buf = binary.AppendUvarint(buf, uint64(e.n))
		buf = binary.AppendVarint(buf, e.ts-prevTS)
		prevTS = e.ts
		buf = binary.AppendUvarint(buf, table[e.kind])
		buf = binary.AppendUvarint(buf, table[string(e.source)])
		appendString(e.id)
		appendString(e.text)
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, crcTable))
}

var errBadCheckpoint = errors.New("malformed checkpoint")

// ckReader reads a checkpoint's fields from s (a string, so ids and texts
// are substrings of one allocation); any overrun sets err.
type ckReader struct {
	s   string
	pos int
	err error
}

func (r *ckReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	var x uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if r.pos >= len(r.s) {
			break
		}
		b := r.s[r.pos]
		r.pos++
		if b < 0x80 {
			return x | uint64(b)<<shift
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	r.err = errBadCheckpoint
	return 0
}

func (r *ckReader) varint() int64 {
	ux := r.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (r *ckReader) uint32() uint32 {
	if r.err != nil || len(r.s)-r.pos < 4 {
		r.err = errBadCheckpoint
		return 0
	}
	v := uint32(r.s[r.pos]) | uint32(r.s[r.pos+1])<<8 | uint32(r.s[r.pos+2])<<16 | uint32(r.s[r.pos+3])<<24
	r.pos += 4
	return v
}

func (r *ckReader) str() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.s)-r.pos) {
		r.err = errBadCheckpoint
		return ""
	}
	s := r.s[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s
}

// decodeCheckpoint parses and checks a checkpoint file's bytes: its checksum
// and that its entries are well-formed (contiguous records adding up to the
// covered size, strictly increasing timestamps, ids and kinds present).
func decodeCheckpoint(data []byte) (checkpoint, error) {
	if len(data) < len(checkpointMagic)+4 || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return checkpoint{}, fmt.Errorf("%w: bad magic", errBadCheckpoint)
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return checkpoint{}, fmt.Errorf("%w: checksum mismatch", errBadCheckpoint)
	}
	r := &ckReader{s: string(body), pos: len(checkpointMagic)}
	var ck checkpoint
	ck.size = int64(r.uvarint())
	ck.firstSum = r.uint32()
	ck.lastSum = r.uint32()
	nstr := r.uvarint()
	if r.err != nil || nstr > uint64(len(r.s)) {
		return checkpoint{}, errBadCheckpoint
	}
	strs := make([]string, nstr)
	for i := range strs {
		strs[i] = r.str()
	}
	count := r.uvarint()
	// An entry takes at least 6 bytes: no allocation beyond what the file
	// can describe.
	if r.err != nil || count == 0 || count > uint64(len(r.s)-r.pos)/6 {
		return checkpoint{}, errBadCheckpoint
	}
	ck.entries = make([]entry, count)
	var off, ts int64
	for i := range ck.entries {
		e := &ck.entries[i]
		n := r.uvarint()
		ts += r.varint()
		ki, si := r.uvarint(), r.uvarint()
		e.id, e.text = r.str(), r.str()
		if r.err != nil || n > maxRecord || ki >= nstr || si >= nstr || (i > 0 && ts <= ck.entries[i-1].ts) {
			return checkpoint{}, fmt.Errorf("%w: entry %d", errBadCheckpoint, i)
		}
		e.off, e.n, e.ts = off+headerSize, uint32(n), ts
		e.kind, e.source = strs[ki], events.Source(strs[si])
		if e.id == "" || e.kind == "" {
			return checkpoint{}, fmt.Errorf("%w: entry %d lacks id or kind", errBadCheckpoint, i)
		}
		off = e.off + int64(e.n)
	}
	if r.err != nil || r.pos != len(r.s) || off != ck.size {
		return checkpoint{}, fmt.Errorf("%w: entries do not add up", errBadCheckpoint)
	}
	return ck, nil
}

// readCheckpoint returns the log's checkpoint when it is intact and
// describes a prefix of this log (of size bytes), or false.
func (l *Log) readCheckpoint(size int64) (checkpoint, bool) {
	data, err := os.ReadFile(l.ckPath)
	if errors.Is(err, os.ErrNotExist) {
		return checkpoint{}, false
	}
	var ck checkpoint
	if err == nil {
		ck, err = decodeCheckpoint(data)
	}
	if err == nil {
		err = l.matches(ck, size)
	}
	if err != nil {
		slog.Warn("event log: ignoring its checkpoint, scanning the whole log", "path", l.path, "error", err)
		return checkpoint{}, false
	}
	return ck, true
}

// matches checks that ck describes a prefix of the log: the log is long
// enough and its first and last covered records are where ck says, with
// the length and checksum it recorded, and intact.
func (l *Log) matches(ck checkpoint, size int64) error {
	if ck.size > size {
		return fmt.Errorf("checkpoint covers %d bytes, the log holds %d", ck.size, size)
	}
	for _, c := range []struct {
		e   entry
		sum uint32
	}{{ck.entries[0], ck.firstSum}, {ck.entries[len(ck.entries)-1], ck.lastSum}} {
		sum, err := l.recordSum(c.e)
		if err != nil {
			return fmt.Errorf("record at offset %d does not match the checkpoint: %w", c.e.off-headerSize, err)
		}
		if sum != c.sum {
			return fmt.Errorf("record at offset %d differs from the checkpoint's", c.e.off-headerSize)
		}
	}
	return nil
}

// recordSum reads e's record and returns its checksum, verified against its
// header (length and CRC); a mismatch is ErrCorrupt.
func (l *Log) recordSum(e entry) (uint32, error) {
	b := make([]byte, headerSize+int(e.n))
	if _, err := l.f.ReadAt(b, e.off-headerSize); err != nil {
		return 0, fmt.Errorf("read event %s: %w", e.id, err)
	}
	n, sum := binary.LittleEndian.Uint32(b[0:4]), binary.LittleEndian.Uint32(b[4:8])
	if n != e.n || crc32.Checksum(b[headerSize:], crcTable) != sum {
		return 0, fmt.Errorf("%w: record of event %s at offset %d", ErrCorrupt, e.id, e.off-headerSize)
	}
	return sum, nil
}

// writeCheckpoint writes a checkpoint of every published event, unless the
// last one already covers them all or the log failed. One at a time.
func (l *Log) writeCheckpoint() error {
	l.ckMu.Lock()
	defer l.ckMu.Unlock()
	l.mu.RLock()
	// Published entries never change, so the prefix can be read unlocked.
	ents := l.entries[:len(l.entries):len(l.entries)]
	skip := l.failed != nil || len(ents) == 0 || len(ents) == l.ckEvents
	l.mu.RUnlock()
	if skip {
		return nil
	}
	first, err := l.recordSum(ents[0])
	if err != nil {
		return err
	}
	last, err := l.recordSum(ents[len(ents)-1])
	if err != nil {
		return err
	}
	if err := atomicfile.Write(l.ckPath, encodeCheckpoint(ents, first, last), 0o600); err != nil {
		return fmt.Errorf("write event log checkpoint: %w", err)
	}
	l.mu.Lock()
	if len(ents) > l.ckEvents {
		l.ckEvents, l.ckSize = len(ents), ents[len(ents)-1].off+int64(ents[len(ents)-1].n)
	}
	l.mu.Unlock()
	return nil
}

// maybeCheckpoint starts a background checkpoint when enough was appended
// since the last one and none is running. Callers hold mu for writing.
func (l *Log) maybeCheckpoint() {
	if l.closed || l.ckRunning || len(l.entries) == 0 {
		return
	}
	last := l.entries[len(l.entries)-1]
	if len(l.entries)-l.ckEvents < max(checkpointEvents, l.ckEvents/checkpointGrowth) &&
		last.off+int64(last.n)-l.ckSize < max(checkpointBytes, l.ckSize/checkpointGrowth) {
		return
	}
	l.ckRunning = true
	l.ckWG.Add(1)
	go func() {
		defer l.ckWG.Done()
		if err := l.writeCheckpoint(); err != nil {
			slog.Warn("event log: checkpoint failed; the next open scans more", "path", l.path, "error", err)
		}
		l.mu.Lock()
		l.ckRunning = false
		l.mu.Unlock()
	}()
}

// removeCheckpoint deletes the checkpoint of a log being created (and
// temporary files a crash left behind while writing one).
func removeCheckpoint(dir string) {
	os.Remove(filepath.Join(dir, CheckpointName))
}

// removeCheckpointTemps deletes temporary checkpoint files older than a
// minute: left by a crash, not being written by another open instance.
func removeCheckpointTemps(dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, "."+CheckpointName+".*.tmp"))
	for _, t := range tmps {
		if st, err := os.Stat(t); err == nil && time.Since(st.ModTime()) > time.Minute {
			os.Remove(t)
		}
	}
}

package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"testing"
)

// stubRW is a stream end of a test: reads return the next of reads (then
// rerr), writes take up to room bytes in all (then werr).
type stubRW struct {
	reads [][]byte
	rerr  error
	room  int
	werr  error
	got   bytes.Buffer
}

func (s *stubRW) Read(p []byte) (int, error) {
	if len(s.reads) == 0 {
		return 0, s.rerr
	}
	n := copy(p, s.reads[0])
	s.reads[0] = s.reads[0][n:]
	if len(s.reads[0]) == 0 {
		s.reads = s.reads[1:]
	}
	if len(s.reads) == 0 {
		return n, s.rerr // the last bytes come with the error
	}
	return n, nil
}

func (s *stubRW) Write(p []byte) (int, error) {
	n := min(len(p), s.room)
	s.room -= n
	s.got.Write(p[:n])
	if n < len(p) {
		return n, s.werr
	}
	return n, nil
}

// TestCounterWrap: every byte a Read returns and a Write takes is counted,
// with or without an error, and only those.
func TestCounterWrap(t *testing.T) {
	errReset := errors.New("stream reset")
	tests := []struct {
		name         string
		rw           *stubRW
		writes       []string
		wantRecv     int64
		wantSent     int64
		wantReadErr  error
		wantWriteErr error
	}{
		{name: "nothing", rw: &stubRW{rerr: io.EOF, room: 0}, wantReadErr: io.EOF},
		{name: "reads to EOF", rw: &stubRW{reads: [][]byte{[]byte("hello "), []byte("world")}, rerr: io.EOF},
			wantRecv: 11, wantReadErr: io.EOF},
		{name: "bytes with a reset", rw: &stubRW{reads: [][]byte{[]byte("abc"), []byte("de")}, rerr: errReset},
			wantRecv: 5, wantReadErr: errReset},
		{name: "writes", rw: &stubRW{rerr: io.EOF, room: 100}, writes: []string{"want", " 3 7"},
			wantSent: 8, wantReadErr: io.EOF},
		{name: "short write", rw: &stubRW{rerr: io.EOF, room: 6, werr: errReset}, writes: []string{"four", "five!"},
			wantSent: 6, wantReadErr: io.EOF, wantWriteErr: errReset},
		{name: "write refused", rw: &stubRW{rerr: io.EOF, room: 0, werr: errReset}, writes: []string{"x"},
			wantReadErr: io.EOF, wantWriteErr: errReset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Counter
			rw := c.Wrap(tt.rw)
			var werr error
			for _, w := range tt.writes {
				if _, werr = rw.Write([]byte(w)); werr != nil {
					break
				}
			}
			_, rerr := io.Copy(io.Discard, struct{ io.Reader }{rw})
			if tt.wantReadErr == io.EOF {
				tt.wantReadErr = nil // io.Copy's success
			}
			if !errors.Is(rerr, tt.wantReadErr) || !errors.Is(werr, tt.wantWriteErr) {
				t.Errorf("errors: read %v, write %v; want %v, %v", rerr, werr, tt.wantReadErr, tt.wantWriteErr)
			}
			if c.Received() != tt.wantRecv || c.Sent() != tt.wantSent {
				t.Errorf("counted %d received, %d sent; want %d, %d", c.Received(), c.Sent(), tt.wantRecv, tt.wantSent)
			}
			if int64(tt.rw.got.Len()) != c.Sent() {
				t.Errorf("the stream took %d bytes, %d counted", tt.rw.got.Len(), c.Sent())
			}
		})
	}
}

// TestCounterFrames: frames written and read through buffers count their
// length prefixes as well as their bytes, once each.
func TestCounterFrames(t *testing.T) {
	var stream bytes.Buffer
	var out, in Counter
	w := bufio.NewWriterSize(out.Wrap(&stream), BufSize)
	big := bytes.Repeat([]byte{7}, 3*BufSize) // written past the buffer
	frames := [][]byte{AppendWant(nil, []int{3, 7}), append(AppendBlockHeader(nil, 3), big...), AppendMissing(nil, 7)}
	want := int64(0)
	for _, f := range frames {
		if err := WriteFrame(w, f); err != nil {
			t.Fatal(err)
		}
		want += int64(len(f) + len(binary.AppendUvarint(nil, uint64(len(f)))))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r := NewReader(in.Wrap(&stream))
	for range frames {
		if _, err := r.Next(1 << 20); err != nil {
			t.Fatal(err)
		}
	}
	if out.Sent() != want || in.Received() != want || out.Received() != 0 || in.Sent() != 0 {
		t.Errorf("sent %d (received %d), read %d (sent %d); want %d and 0", out.Sent(), out.Received(), in.Received(), in.Sent(), want)
	}
}

// TestCounterConcurrent: counts from many goroutines add up (run with -race).
func TestCounterConcurrent(t *testing.T) {
	var c Counter
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rw := c.Wrap(&stubRW{reads: [][]byte{make([]byte, 100)}, rerr: io.EOF, room: 1 << 20})
			for range 100 {
				rw.Write(make([]byte, 10))
			}
			io.Copy(io.Discard, struct{ io.Reader }{rw})
			c.Add(1, 2)
		}()
	}
	wg.Wait()
	if c.Received() != 8*101 || c.Sent() != 8*1002 {
		t.Errorf("received %d, sent %d; want %d, %d", c.Received(), c.Sent(), 8*101, 8*1002)
	}
}

// TestCounterContext: a context carries its counter to derived ones; none
// is nil, and a nil counter wraps nothing.
func TestCounterContext(t *testing.T) {
	if CounterOf(context.Background()) != nil {
		t.Error("a counter in a context that was given none")
	}
	c := new(Counter)
	ctx, cancel := context.WithCancel(WithCounter(context.Background(), c))
	defer cancel()
	if CounterOf(ctx) != c {
		t.Error("a derived context lost its counter")
	}
	rw := &stubRW{}
	if got := CounterOf(context.Background()).Wrap(rw); got != io.ReadWriter(rw) {
		t.Errorf("a nil counter wrapped the stream: %T", got)
	}
}

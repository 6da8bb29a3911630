package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// readChunk is the largest step by which a frame buffer grows before the bytes
// that fill it have arrived.
const readChunk = 64 << 10

// Reader reads length-prefixed frames, each of at most the size its caller
// allows. Its buffer grows only as a frame's bytes arrive (by at most 64 KiB
// ahead of them), so a frame that claims more than it carries costs what it
// carried. A Reader is not safe for concurrent use.
type Reader struct {
	r   *bufio.Reader
	buf []byte
	// left is how many bytes of the frame Begin started are still unread.
	left int
}

// BufSize is the size of a stream's read and write buffers. They only
// gather small frames (hello, want, missing, headers): a frame larger than
// the buffer is read or written straight from or to its own memory, so a
// larger buffer would cost memory on every open stream (thousands in a
// testnet) and save nothing.
const BufSize = 4 << 10

// NewReader returns a Reader of the frames of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, BufSize)}
}

// Next returns the next frame, of at most max bytes (a longer one is
// ErrFrameTooLarge). The slice is valid until the following call. A clean
// end of stream before a frame starts is io.EOF; an end inside a frame is
// io.ErrUnexpectedEOF; other errors of the underlying reader (a reset, a
// deadline) come back as they are.
func (fr *Reader) Next(limit int) ([]byte, error) { return fr.NextAdmit(limit, nil) }

// NextAdmit is Next, calling admit (when not nil) with the frame's length
// once it is known to be within limit and before any of its bytes are read
// or buffered: an error from admit is returned, and the frame is left
// unread (the stream is then of no further use).
func (fr *Reader) NextAdmit(limit int, admit func(n int) error) ([]byte, error) {
	need, err := fr.start(limit)
	if err != nil {
		return nil, err
	}
	if admit != nil {
		if err := admit(need); err != nil {
			return nil, err
		}
	}
	buf := fr.buf[:0]
	for len(buf) < need {
		step := need - len(buf)
		if c := max(readChunk, len(buf)); step > c && cap(buf) < need {
			step = c
		}
		if cap(buf)-len(buf) < step {
			nb := make([]byte, len(buf), len(buf)+step)
			copy(nb, buf)
			buf = nb
		}
		if _, err := io.ReadFull(fr.r, buf[len(buf):len(buf)+step]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		buf = buf[:len(buf)+step]
	}
	fr.buf = buf
	return buf, nil
}

// NextInto is Next, reading the frame into the memory of a buffer from get
// (when it has the capacity) and handing that memory to the caller: the
// Reader keeps no reference to it. get is called with the frame's length
// once it is known to be within max, before any of the frame's bytes are
// read, so a reader waiting for its next frame holds no frame buffer and
// a short frame needs no buffer of the longest size.
func (fr *Reader) NextInto(get func(n int) []byte, max int) ([]byte, error) {
	f, err := fr.NextAdmit(max, func(n int) error {
		fr.buf = get(n)[:0]
		return nil
	})
	fr.buf = nil
	return f, err
}

// Begin starts the next frame, of at most limit bytes (a longer one is
// ErrFrameTooLarge), and returns its length without reading its bytes:
// ReadFull reads them, in as many calls as the caller likes, and the
// frame must be read to its end before the next Begin or Next. A push
// stream takes a block so, a piece at a time, to pass each piece on before
// the block's last bytes arrive. A clean end of stream before the frame
// starts is io.EOF.
func (fr *Reader) Begin(limit int) (int, error) {
	n, err := fr.start(limit)
	if err == nil {
		fr.left = n
	}
	return n, err
}

// start reads the next frame's length, of at most limit bytes, once the
// frame Begin started is read to its end.
func (fr *Reader) start(limit int) (int, error) {
	if fr.left > 0 {
		return 0, errUnfinished
	}
	n, err := readLength(fr.r)
	if err != nil {
		return 0, err
	}
	if n > uint64(limit) {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, limit)
	}
	return int(n), nil
}

// ReadFull reads the next len(p) bytes of the frame Begin started; asking
// for more than the frame has left is an error, and an end of stream
// inside the frame is io.ErrUnexpectedEOF.
func (fr *Reader) ReadFull(p []byte) error {
	if len(p) > fr.left {
		return fmt.Errorf("wire: read of %d bytes, %d left in the frame", len(p), fr.left)
	}
	n, err := io.ReadFull(fr.r, p)
	fr.left -= n
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// errUnfinished is a frame started by Begin and not read to its end.
var errUnfinished = errors.New("wire: the frame begun is not read to its end")

// readLength reads a frame's uvarint length. Only a length that overflows 64
// bits is malformed: an error of the stream itself (a reset, a deadline) is
// returned as it is, so that a slow or vanished peer is not taken for a
// misbehaving one. A clean end of stream before the first byte is io.EOF, in
// the middle io.ErrUnexpectedEOF.
func readLength(r io.ByteReader) (uint64, error) {
	var x uint64
	var s uint
	for i := range binary.MaxVarintLen64 {
		b, err := r.ReadByte()
		if err != nil {
			if i > 0 && errors.Is(err, io.EOF) {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				break
			}
			return x | uint64(b)<<s, nil
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, fmt.Errorf("%w: frame length overflows 64 bits", ErrMalformed)
}

// WriteFrame writes one frame made of the concatenation of parts.
func WriteFrame(w *bufio.Writer, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	var hdr [binary.MaxVarintLen64]byte
	if _, err := w.Write(hdr[:binary.PutUvarint(hdr[:], uint64(n))]); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

package remoting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestReadBufClasses(t *testing.T) {
	if minReadBuffer<<(readBufClasses-1) != maxReadBuffer {
		t.Fatalf("classes %d from %d do not end at %d", readBufClasses, minReadBuffer, maxReadBuffer)
	}
	for i := range readBufClasses {
		if got := readBufClass(minReadBuffer << i); got != i {
			t.Fatalf("class of %d = %d, want %d", minReadBuffer<<i, got, i)
		}
	}
}

// chunkReader returns src in reads of the sizes in chunks (cycled; 0
// means an empty read), each also bounded by the caller's slice.
type chunkReader struct {
	src    []byte
	chunks []int
	i      int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.src) == 0 {
		return 0, io.EOF
	}
	n := len(c.src)
	if len(c.chunks) > 0 {
		n = min(n, c.chunks[c.i%len(c.chunks)])
		c.i++
	}
	n = copy(p, c.src[:min(n, len(p))])
	c.src = c.src[n:]
	return n, nil
}

// frameStream encodes bodies as length-prefixed frames, the way the read
// loop reads them.
func frameStream(bodies [][]byte) []byte {
	var s []byte
	for _, b := range bodies {
		s = binary.BigEndian.AppendUint32(s, uint32(len(b)))
		s = append(s, b...)
	}
	return s
}

// readFrames reads length-prefixed frames as readLoop does until an error.
func readFrames(br *readBuf) ([][]byte, error) {
	var got [][]byte
	var lenBuf [4]byte
	for {
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			return got, err
		}
		buf, err := readFrame(br, int(binary.BigEndian.Uint32(lenBuf[:])))
		if err != nil {
			return got, err
		}
		got = append(got, buf)
	}
}

func patterned(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed)
	}
	return b
}

// Frames of every size around the buffer's classes, read through growth
// (whole-stream reads) and shrinking (short reads), arrive intact.
func TestReadBufFramesAcrossResizes(t *testing.T) {
	t.Parallel()
	var bodies [][]byte
	for i, n := range []int{0, 1, 300, 508, 509, 512, 1000, 3000, 4096, 20000, 32 << 10, maxReadBuffer - 4,
		maxReadBuffer, maxReadBuffer + 1, 10, 10, 200 << 10, 5, 3 << 20, 7} {
		bodies = append(bodies, patterned(n, i))
	}
	src := frameStream(bodies)
	for name, chunks := range map[string][]int{
		"whole":     nil,
		"bytes":     {1},
		"mixed":     {3, 0, 700, 1, 40000, 2, 129, 1 << 20, 5},
		"growing":   {512, 1024, 2048, 4096, 8192, 16384, 32768, 65536},
		"shrinking": {65536, 100, 100, 100, 100, 100, 100, 9},
	} {
		br := newReadBuf(&chunkReader{src: src, chunks: chunks})
		got, err := readFrames(br)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("%s: err %v after %d frames", name, err, len(got))
		}
		if len(got) != len(bodies) {
			t.Fatalf("%s: %d frames, want %d", name, len(got), len(bodies))
		}
		for i := range bodies {
			if !bytes.Equal(got[i], bodies[i]) {
				t.Fatalf("%s: frame %d (%d bytes) differs", name, i, len(bodies[i]))
			}
		}
		br.release()
	}
}

// The buffer doubles while reads fill it, up to maxReadBuffer, and goes
// back to about twice the recent reads once they are short.
func TestReadBufSize(t *testing.T) {
	t.Parallel()
	src := make([]byte, 4<<20)
	cr := &chunkReader{src: src}
	br := newReadBuf(cr)
	if br.size() != minReadBuffer {
		t.Fatalf("starts at %d", br.size())
	}
	p := make([]byte, 300)
	want := minReadBuffer
	for range 40 {
		// Read what is buffered, 100 bytes at a time: each fill reads a
		// full buffer from the endless source.
		for {
			if _, err := br.Read(p[:100]); err != nil {
				t.Fatal(err)
			}
			if br.Buffered() == 0 {
				break
			}
		}
		if br.size() != want {
			t.Fatalf("size %d, want %d", br.size(), want)
		}
		want = min(2*want, maxReadBuffer)
	}
	// Short reads of 300 bytes: after shortReadsToShrink of them the
	// buffer is 1 KiB (twice 300, rounded up to a class).
	cr.chunks = []int{300}
	for range shortReadsToShrink + 1 {
		if _, err := io.ReadFull(br, p[:300]); err != nil {
			t.Fatal(err)
		}
	}
	if br.size() != 1024 {
		t.Fatalf("after short reads: size %d, want 1024", br.size())
	}
}

func TestReadBufErrors(t *testing.T) {
	t.Parallel()
	br := newReadBuf(&chunkReader{src: []byte("abc")})
	got, err := io.ReadAll(br)
	if err != nil || string(got) != "abc" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	br = newReadBuf(eofWithData{})
	var p [10]byte
	if n, err := br.Read(p[:]); n != 2 || err != nil {
		t.Fatalf("first read %d, %v: the data comes before the error", n, err)
	}
	if n, err := br.Read(p[:]); n != 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("second read %d, %v", n, err)
	}
	if _, err := newReadBuf(emptyReader{}).Read(p[:]); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("endless empty reads: %v", err)
	}
}

// negativeReader returns n < 0 from every Read, with err.
type negativeReader struct {
	n   int
	err error
}

func (r negativeReader) Read([]byte) (int, error) { return r.n, r.err }

// A reader returning a negative count fails the read with errNegativeRead
// (bufio.Reader panics), through the buffer or straight into a large p.
func TestReadBufNegativeRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		rd   negativeReader
		p    int
	}{
		{"buffered", negativeReader{-1, nil}, 4},
		{"buffered with error", negativeReader{-5, io.EOF}, 4},
		{"direct", negativeReader{-1, nil}, 2 * minReadBuffer},
		{"direct with error", negativeReader{-1 << 20, io.EOF}, 2 * minReadBuffer},
	} {
		br := newReadBuf(tc.rd)
		n, err := br.Read(make([]byte, tc.p))
		if n != 0 || !errors.Is(err, errNegativeRead) {
			t.Errorf("%s: Read = %d, %v; want 0, errNegativeRead", tc.name, n, err)
		}
		if br.Buffered() != 0 {
			t.Errorf("%s: %d bytes buffered after the failed read", tc.name, br.Buffered())
		}
		br.release()
	}
}

// A connection whose reader returns a negative count closes with
// errNegativeRead, logged as a warning.
func TestConnNegativeReadCloses(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	defer b.Close()
	var logs bytes.Buffer
	c := newConn(a, &connConfig{log: slog.New(slog.NewTextHandler(&logs, nil)), maxFrame: 1 << 20, limit: newLimiter(0)})
	c.rd = negativeReader{-1, nil}
	go c.serve()
	<-c.Done()
	if err := c.Err(); !errors.Is(err, errNegativeRead) || !errors.Is(err, ErrClosed) {
		t.Fatalf("closed with %v, want ErrClosed and errNegativeRead", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), errNegativeRead.Error()) {
		t.Fatalf("log %q has no warning with the error", logs.String())
	}
}

type eofWithData struct{}

func (eofWithData) Read(p []byte) (int, error) { return copy(p, "xy"), io.ErrUnexpectedEOF }

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

// FuzzReadBuf: frames of any sizes, delivered in any chunks, are read back
// exactly.
func FuzzReadBuf(f *testing.F) {
	f.Add([]byte{0, 1, 2, 255, 4, 9}, []byte{1, 200, 3})
	f.Add([]byte{200, 200, 200, 1, 0}, []byte{0, 255})
	f.Fuzz(func(t *testing.T, sizes, chunkBytes []byte) {
		if len(sizes) > 64 {
			sizes = sizes[:64]
		}
		var bodies [][]byte
		for i, s := range sizes {
			// Up to 255 * 512 bytes: across every class and past the max.
			bodies = append(bodies, patterned(int(s)*int(s)*2+int(s), i))
		}
		chunks := make([]int, len(chunkBytes))
		for i, c := range chunkBytes {
			chunks[i] = int(c) * int(c) // 0 (an empty read) to 65,025
		}
		if len(chunks) > 0 && slicesAllZero(chunks) {
			chunks = append(chunks, 1)
		}
		br := newReadBuf(&chunkReader{src: frameStream(bodies), chunks: chunks})
		got, err := readFrames(br)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("err %v after %d frames", err, len(got))
		}
		if len(got) != len(bodies) {
			t.Fatalf("%d frames, want %d", len(got), len(bodies))
		}
		for i := range bodies {
			if !bytes.Equal(got[i], bodies[i]) {
				t.Fatalf("frame %d (%d bytes) differs", i, len(bodies[i]))
			}
		}
		if br.size() < minReadBuffer || br.size() > maxReadBuffer {
			t.Fatalf("size %d out of bounds", br.size())
		}
	})
}

func slicesAllZero(s []int) bool {
	for _, v := range s {
		if v != 0 {
			return false
		}
	}
	return true
}

// Pipelined requests of growing and shrinking sizes, written at once and
// trickled in small writes, are all answered in order by a server.
func TestPipelinedFramesAcrossBufferGrowth(t *testing.T) {
	t.Parallel()
	_, addr := newTestServer(t, ServerOptions{})
	sizes := []int{1, 400, 600, 5000, 70000, 10, 1 << 20, 3, 300, 33000, 2}
	var stream []byte
	for i, n := range sizes {
		req := protocol.NewRequest(testCode, nil, patterned(n, i))
		req.Opaque = int32(i + 1)
		frame, err := req.Encode()
		if err != nil {
			t.Fatal(err)
		}
		stream = append(stream, frame...)
	}
	for _, step := range []int{len(stream), 777} {
		nc := dialRaw(t, addr)
		go func() {
			for s := stream; len(s) > 0; {
				n := min(step, len(s))
				if _, err := nc.Write(s[:n]); err != nil {
					return
				}
				s = s[n:]
			}
		}()
		for range sizes {
			resp := readCmd(t, nc)
			i := int(resp.Opaque) - 1
			if i < 0 || i >= len(sizes) || !bytes.Equal(resp.Body, patterned(sizes[i], i)) {
				t.Fatalf("step %d: response opaque %d with %d bytes", step, resp.Opaque, len(resp.Body))
			}
		}
		nc.Close()
	}
}

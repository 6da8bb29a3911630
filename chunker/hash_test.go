package chunker

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/internal/cputime"

	"lukechampine.com/blake3"
)

// blake3Vectors are the official BLAKE3 test vectors (test_vectors.json of
// the BLAKE3 team's repository): the unkeyed hash, first 32 bytes, of the
// input of n bytes 0, 1, ..., 250, 0, 1, ... (byte i is i mod 251).
var blake3Vectors = []struct {
	n    int
	hash string
}{
	{0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
	{1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"},
	{1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"},
	{1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"},
	{1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
	{2048, "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a"},
	{2049, "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"},
	{3072, "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd2"},
	{3073, "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3"},
	{4096, "015094013f57a5277b59d8475c0501042c0b642e531b0a1c8f58d2163229e969"},
	{4097, "9b4052b38f1c5fc8b1f9ff7ac7b27cd242487b3d890d15c96a1c25b8aa0fb995"},
	{5120, "9cadc15fed8b5d854562b26a9536d9707cadeda9b143978f319ab34230535833"},
	{5121, "628bd2cb2004694adaab7bbd778a25df25c47b9d4155a55f8fbd79f2fe154cff"},
	{6144, "3e2e5b74e048f3add6d21faab3f83aa44d3b2278afb83b80b3c35164ebeca205"},
	{6145, "f1323a8631446cc50536a9f705ee5cb619424d46887f3c376c695b70e0f0507f"},
	{7168, "61da957ec2499a95d6b8023e2b0e604ec7f6b50e80a9678b89d2628e99ada77a"},
	{7169, "a003fc7a51754a9b3c7fae0367ab3d782dccf28855a03d435f8cfe74605e7817"},
	{8192, "aae792484c8efe4f19e2ca7d371d8c467ffb10748d8a5a1ae579948f718a2a63"},
	{8193, "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b"},
	{16384, "f875d6646de28985646f34ee13be9a576fd515f76b5b0a26bb324735041ddde4"},
	{31744, "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47"},
	{100000, "d93c23eedaf165a7e0be908ba86f1a7a520d568d2d13cde787c8580c5c72cc54"},
}

// TestHashBlockVectors checks HashBlock against the official BLAKE3 vectors.
func TestHashBlockVectors(t *testing.T) {
	for _, v := range blake3Vectors {
		in := make([]byte, v.n)
		for i := range in {
			in[i] = byte(i % 251)
		}
		got := HashBlock(in)
		if h := hex.EncodeToString(got[:]); h != v.hash {
			t.Errorf("HashBlock of %d bytes = %s, want %s", v.n, h, v.hash)
		}
	}
}

// BenchmarkHash compares the candidate block hashes over one default-size block; it
// is the measurement behind HashName and HashBlock. cpu-ns/op is the CPU time of the
// process per hash (lukechampine.com/blake3's Sum256 spreads a large input
// over goroutines, so its ns/op alone hides the cores it takes).
func BenchmarkHash(b *testing.B) {
	data := make([]byte, DefaultBlockSize)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, c := range []struct {
		name string
		fn   func([]byte) [32]byte
	}{
		{"HashBlock", HashBlock},
		{"lukechampine-Sum256", blake3.Sum256},
		{"sha256", sha256.Sum256},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			c0 := cpuTime()
			for b.Loop() {
				c.fn(data)
			}
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func nanotime() int64 { return time.Now().UnixNano() }

// cpuTime is the user and system CPU time of the process so far, in ns.
func cpuTime() int64 {
	d, _ := cputime.Self()
	return int64(d)
}

// BenchmarkHashVersus hashes the same 256 KiB block with HashBlock,
// lukechampine.com/blake3's Sum256 and SHA-256 in alternation, so that the
// machine's load affects all alike, and reports each one's MB/s (of wall
// time) and the ratios of their times: speedup = SHA-256 / HashBlock,
// vs-sum256 = lukechampine's Sum256 / HashBlock.
func BenchmarkHashVersus(b *testing.B) {
	data := make([]byte, DefaultBlockSize)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var th, tl, ts int64
	for b.Loop() {
		t0 := nanotime()
		HashBlock(data)
		t1 := nanotime()
		blake3.Sum256(data)
		t2 := nanotime()
		sha256.Sum256(data)
		th, tl, ts = th+t1-t0, tl+t2-t1, ts+nanotime()-t2
	}
	n := float64(b.N) * float64(len(data))
	b.ReportMetric(n/float64(th)*1e3, "blake3MB/s")
	b.ReportMetric(n/float64(tl)*1e3, "sum256MB/s")
	b.ReportMetric(n/float64(ts)*1e3, "sha256MB/s")
	b.ReportMetric(float64(ts)/float64(th), "speedup")
	b.ReportMetric(float64(tl)/float64(th), "vs-sum256")
}

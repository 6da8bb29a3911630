package bounded

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A str of 3 bytes that claims a thousand is refused before anything is
// allocated, and the error names what was read.
func ExampleDecoder_Bytes() {
	md := NewDecoder([]byte{0xda, 0x03, 0xe8, 'a', 'b', 'c'}) // str 16, length 1000
	_, err := md.Bytes("file path", 4096)
	fmt.Println(err)
	// Output: file path: length 1000
}

// TestClaims checks each read against inputs that claim more than they hold
// or more than allowed, and that their errors are *Error.
func TestClaims(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		read func(*Decoder) error
		want string // a part of the error, "" for none
	}{
		{"bin within limit", []byte{0xc4, 0x02, 1, 2}, func(md *Decoder) error { _, err := md.Bytes("b", 2); return err }, ""},
		{"bin over limit", []byte{0xc4, 0x02, 1, 2}, func(md *Decoder) error { _, err := md.Bytes("b", 1); return err }, "b: length 2"},
		{"bin over input", []byte{0xc6, 0x7f, 0xff, 0xff, 0xff}, func(md *Decoder) error { _, err := md.Bytes("b", 1<<40); return err }, "b: length 2147483647"},
		{"not a bin", []byte{0x01}, func(md *Decoder) error { _, err := md.Bytes("b", 9); return err }, "b: msgpack"},
		{"uint in range", []byte{0x07}, func(md *Decoder) error { _, err := md.Uint("u", 7); return err }, ""},
		{"uint out of range", []byte{0x08}, func(md *Decoder) error { _, err := md.Uint("u", 7); return err }, "u 8 out of range"},
		{"array the input holds", []byte{0x92, 1, 2}, func(md *Decoder) error { _, err := md.Array("a", 1); return err }, ""},
		{"array over input", []byte{0xdd, 0x00, 0x10, 0x00, 0x00, 1}, func(md *Decoder) error { _, err := md.Array("a", 1); return err }, "a count 1048576"},
		{"array of large elements", []byte{0x92, 1, 2}, func(md *Decoder) error { _, err := md.Array("a", 2); return err }, "a count 2"},
	} {
		err := tc.read(NewDecoder(tc.in))
		var bad *Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.As(err, &bad) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an *Error with %q", tc.name, err, tc.want)
		}
	}
}

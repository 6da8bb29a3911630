package outcome

import "fmt"

// ExampleFetchEventKind: the kinds of a fetch's events, as logs name them.
func ExampleFetchEventKind() {
	for _, k := range []FetchEventKind{FetchCorruptBlock, FetchPeerBanned, FetchPeerStillBanned, 0} {
		fmt.Println(k)
	}
	// Output:
	// corrupt-block
	// peer-banned
	// peer-still-banned
	// unknown
}

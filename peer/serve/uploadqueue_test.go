package serve

import (
	"testing"
	"time"
)

// TestUploadQueue: a lone asker is always served; others are turned away
// once uploadQueue other peers have blocks queued, each counted up to
// uploadQueuePeer and only while it reads; the queue frees as blocks are
// sent.
func TestUploadQueue(t *testing.T) {
	if uploadQueue != 2 || uploadQueuePeer != 1 {
		t.Fatalf("the test is written for a queue of 2 peers")
	}
	c := &Content{fresh: uploadQueueFresh}
	now := time.Unix(100, 0)
	if !c.queue("a", 100, now) || !c.queue("a", 100, now) {
		t.Fatal("a lone asker was turned away")
	}
	// a counts uploadQueuePeer for the others: b fits, again and again.
	if !c.queue("b", 8, now) || !c.queue("b", 1, now) {
		t.Fatal("b turned away behind one peer's queue")
	}
	// a and b together fill the queue for c.
	if c.queue("c", 1, now) {
		t.Fatal("c queued behind a full queue")
	}
	// a and b stop reading: after uploadQueueFresh they no longer count.
	if !c.queue("c", 1, now.Add(uploadQueueFresh)) {
		t.Fatal("c turned away by peers that do not read")
	}
	// b reads again: with a stale, b alone does not fill the queue.
	now = now.Add(2 * uploadQueueFresh)
	c.unqueue("b", 1, now)
	if !c.queue("c", 4, now) {
		t.Fatal("c turned away by b alone")
	}
	// c and b fill it for a.
	if c.queue("a", 1, now) {
		t.Fatal("a queued behind b and c")
	}
	c.unqueue("b", 8, now)
	if !c.queue("a", 1, now) {
		t.Fatal("a turned away once b's blocks were sent")
	}
	c.unqueue("c", 5, now)
	c.unqueue("a", 201, now)
	c.unqueue("x", 5, now) // never queued: no effect
	if len(c.queued) != 0 {
		t.Fatalf("queue left %v", c.queued)
	}
}

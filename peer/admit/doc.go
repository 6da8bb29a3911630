// Package admit holds the policies by which a peer shares out what it
// serves to strangers: fair shares of a capacity among remote peers
// (FairPool), token buckets per peer (RateTable), bounds on the blocks
// asked for again and again (Repeats), abuse scores that decay with time
// (Scores) and the deny-list of banned peers (DenyList).
//
// Everything here is pure: no network and no clock reads. The caller (package
// peer) hands in the time and names peers by a share key or any comparable
// key, so every policy is tested without sleeping.
package admit

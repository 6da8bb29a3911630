package wire

import "github.com/libp2p/go-libp2p/core/protocol"

// The protocols a peer speaks. Each is one request per stream, except blocks,
// where one stream carries many want and block messages.
const (
	// ProtoManifest answers a root id with the content's manifest.
	ProtoManifest protocol.ID = "/reconcile/1/manifest"
	// ProtoReconcile carries one reconciliation exchange of package reconcile:
	// the fetcher's filter in, the indices of the blocks to offer it out.
	ProtoReconcile protocol.ID = "/reconcile/1/reconcile"
	// ProtoBlocks moves blocks: want messages in, block messages out.
	ProtoBlocks protocol.ID = "/reconcile/1/blocks"
	// ProtoPeers lists other peers that hold or fetch the same content.
	ProtoPeers protocol.ID = "/reconcile/1/peers"
	// ProtoPush carries the pushes of stripe trees (Service.Push): a parent
	// opens it to a child and writes block frames after the hello, each
	// block of the child's stripes as the parent gains it, and have frames
	// naming blocks it will not push (the child fetches them from its own
	// sources); the child answers the hello once (an empty have frame:
	// taken; an error frame: refused) and nothing after.
	ProtoPush protocol.ID = "/reconcile/1/push"
	// ProtoAdopt asks a peer to adopt this one in a stripe whose parent
	// left or lies (see Stripes.Grandparents): a want frame of the blocks
	// of that stripe the asker lacks after the hello; the answer is a have
	// frame (adopted: pushes follow on ProtoPush; it names the blocks of the
	// request the asker is not to wait for, which it fetches from its own
	// sources: other peers hold them, and the adopter lacks them or, a
	// seed, spares its uplink), then, when the adopter has a parent in
	// the stripe, a peers frame naming it (the asker's grandparent from
	// then on); or a peers frame of one peer to ask instead; or an error
	// frame (refused).
	ProtoAdopt protocol.ID = "/reconcile/1/adopt"
	// ProtoOffer offers the manifest of a content to a peer that does not
	// serve it (it answered "unknown root"), for the blocks it holds of other
	// contents, such as an older version: the manifest frame follows the
	// hello; the answer is an empty have frame (the peer now serves, under
	// the content's root, the blocks of it that its other contents hold) or
	// an error frame (none, or no room for it now).
	ProtoOffer protocol.ID = "/reconcile/1/offer"
	// ProtoJoin places a fetcher in a seed's stripe trees (a seed that
	// places its fetchers as they join, see stripes.Placer): after the
	// hello, the seed writes place frames (TypePlace) for as long as the
	// fetcher keeps the stream open: first its parents, then every change
	// of its parents and children as others join and leave. The fetcher
	// writes nothing; its leaving (the stream closed or reset) frees its
	// places. A peer that places no fetchers for the content answers an
	// error frame.
	ProtoJoin protocol.ID = "/reconcile/1/join"
	// ProtoDelta asks for runs of blocks as deltas against bytes the asker
	// holds (package delta): after the hello, delta frames each naming a
	// run and carrying the signature of the asker's bytes for it (see
	// AppendDeltaAsk), then the end of the asker's writes. The answer to
	// each, in order, is a delta frame of the delta, a missing frame (the
	// peer lacks a block of the run, or will not make this delta), or an
	// error frame that ends the request.
	ProtoDelta protocol.ID = "/reconcile/1/delta"
	// ProtoManifestDelta asks for a content's manifest as a delta against
	// a manifest the asker holds (that of an older version): after the
	// hello, a delta frame of the older manifest's signature (package
	// delta); the answer is a delta frame of the delta, a manifest frame of
	// the whole manifest (when a delta would be no smaller), or an error
	// frame. The root checks the manifest rebuilt, as any.
	ProtoManifestDelta protocol.ID = "/reconcile/1/manifest-delta"
)

package colossus

import (
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// pooledMessageBytes is the largest tier of grpc-go's default buffer pool below 1 MiB.
const pooledMessageBytes = 32 << 10

// recvCodec is grpc-go's own proto codec except for how a received message that arrived
// in several pieces is put together before decoding: over 32 KiB it gets a buffer of its
// own size. grpc-go takes that buffer from the pool's next tier, 1 MiB, which the memory
// profile of the watch showed allocated and zeroed by the GetRun that reconciles the end
// of every long run (a run of 4,099 events answers with about 40 KB of output) each time
// a garbage collection had emptied that pool. Decoding itself is unchanged: the same
// proto.Unmarshal, which copies what it keeps.
type recvCodec struct{ encoding.CodecV2 }

// newRecvCodec wraps the proto codec grpc-go registers.
func newRecvCodec() recvCodec { return recvCodec{encoding.GetCodecV2(grpcproto.Name)} }

// Name is empty so that grpc-go, which names the content-subtype after a forced codec,
// keeps sending content-type application/grpc: nothing changes on the wire.
func (recvCodec) Name() string { return "" }

func (c recvCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok || len(data) <= 1 || data.Len() <= pooledMessageBytes {
		// One piece is decoded in place; small ones fit a well-sized pool tier.
		return c.CodecV2.Unmarshal(data, v)
	}
	return proto.Unmarshal(data.Materialize(), m)
}

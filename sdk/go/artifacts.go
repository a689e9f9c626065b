package colossus

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"hash"
	"io"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

const defaultChunkBytes = 64 * 1024

// chunkFraming is the most a chunk message adds to its bytes: one tag byte and a length
// varint of at most five bytes.
const chunkFraming = 6

// uploadChunkBytes is the size of each upload chunk: the worker's chunk limit, but small
// enough that every chunk message also fits the advertised request cap (C7).
func uploadChunkBytes(l Limits) int {
	chunk := uint64(defaultChunkBytes)
	if l.MaxArtifactChunkBytes > 0 {
		chunk = uint64(l.MaxArtifactChunkBytes)
	}
	if l.MaxRequestBytes > chunkFraming && chunk > l.MaxRequestBytes-chunkFraming {
		chunk = l.MaxRequestBytes - chunkFraming
	}
	return int(min(chunk, 1<<30))
}

// Artifacts is client.Artifacts: size- and digest-bound uploads and verified downloads.
// Every call needs the worker's artifacts capability and is refused locally without it.
type Artifacts struct{ c *Client }

// Upload stores data once (scope artifacts:write); it is never retried. The manifest
// binds the upload to the data's size and SHA-256, and the stored artifact must echo both.
func (a *Artifacts) Upload(ctx context.Context, data []byte, mediaType string, opts ...CallOption) (*Artifact, error) {
	cfg, err := collectFor("Artifacts.Upload", opts, "WithTimeout", "WithDisplayName")
	if err != nil {
		return nil, err
	}
	s, err := a.c.session(ctx)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	manifest, err := checkManifest(&s.info, uint64(len(data)), digest, mediaType, cfg.displayName)
	if err != nil {
		return nil, err
	}
	// The chunks are cut to fit the request cap; every message, the manifest too, is
	// checked against it where requests leave (request_cap.go).
	first := &pb.UploadArtifactRequest{Part: &pb.UploadArtifactRequest_Manifest{Manifest: manifest}}
	chunk := uploadChunkBytes(s.info.Limits)
	callCtx, cancel := callContext(ctx, a.c.opts, cfg)
	defer cancel()
	stream, err := s.artifacts.UploadArtifact(callCtx, s.callOpts...)
	if err != nil {
		return nil, s.mapError(callCtx, err, mutationCall, "")
	}
	send := func(m *pb.UploadArtifactRequest) error {
		if err := stream.Send(m); err != nil && err != io.EOF {
			return err
		}
		return nil
	}
	if err := send(first); err != nil {
		return nil, s.mapError(callCtx, err, mutationCall, "")
	}
	for off := 0; off < len(data); off += chunk {
		end := min(off+chunk, len(data))
		if err := send(&pb.UploadArtifactRequest{Part: &pb.UploadArtifactRequest_Chunk{Chunk: data[off:end]}}); err != nil {
			return nil, s.mapError(callCtx, err, mutationCall, "")
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return nil, s.mapError(callCtx, err, mutationCall, "")
	}
	stored := toArtifact(resp.GetArtifact())
	if stored.SizeBytes != uint64(len(data)) || stored.SHA256 != digest {
		return nil, newError(ErrProtocolViolation, ReasonArtifactMismatch, "the worker stored an artifact that differs from the upload")
	}
	if err := checkID(stored.ArtifactID, "artifact_id"); err != nil {
		return nil, newError(ErrProtocolViolation, ReasonResponseMalformed, "the worker returned a malformed artifact ID")
	}
	return &stored, nil
}

// Download fetches one artifact (scope artifacts:read) and returns its bytes only after
// their length and SHA-256 match the artifact's metadata. UNAVAILABLE restarts the
// download from the beginning under the read policy.
func (a *Artifacts) Download(ctx context.Context, artifactID string, opts ...CallOption) (*DownloadedArtifact, error) {
	if err := checkID(artifactID, "artifact_id"); err != nil {
		return nil, err
	}
	cfg, err := collectFor("Artifacts.Download", opts, "WithTimeout", "WithRetry")
	if err != nil {
		return nil, err
	}
	return retryRead(ctx, a.c, "DownloadArtifact", a.c.opts.retryFor(cfg), func(ctx context.Context) (*DownloadedArtifact, error) {
		s, err := a.c.session(ctx)
		if err != nil {
			return nil, err
		}
		if err := requireCapability(&s.info, CapabilityArtifacts, "an artifact download"); err != nil {
			return nil, err
		}
		req := &pb.DownloadArtifactRequest{ArtifactId: artifactID}
		callCtx, cancel := callContext(ctx, a.c.opts, cfg)
		defer cancel()
		stream, err := s.artifacts.DownloadArtifact(callCtx, req, s.callOpts...)
		if err != nil {
			return nil, s.mapError(callCtx, err, readCall, "")
		}
		v := downloadVerifier{artifactID: artifactID, maxBytes: s.info.Limits.MaxArtifactBytes, hash: sha256.New()}
		for {
			msg, err := stream.Recv()
			if err == io.EOF {
				return v.finish()
			}
			if err != nil {
				return nil, s.mapError(callCtx, err, readCall, "")
			}
			if err := v.feed(msg); err != nil {
				return nil, err
			}
		}
	})
}

// downloadVerifier checks a download stream with no I/O: metadata first, then chunks,
// never more than the declared size, digest compared at the end.
type downloadVerifier struct {
	artifactID string
	maxBytes   uint64
	artifact   *Artifact
	hash       hash.Hash
	data       []byte
}

func (v *downloadVerifier) feed(m *pb.DownloadArtifactResponse) error {
	switch part := m.GetPart().(type) {
	case *pb.DownloadArtifactResponse_Artifact:
		if v.artifact != nil {
			return newError(ErrProtocolViolation, ReasonArtifactStreamOrder, "the download sent metadata twice")
		}
		art := toArtifact(part.Artifact)
		if art.ArtifactID != v.artifactID {
			return newError(ErrProtocolViolation, ReasonArtifactStreamOrder, "the download described another artifact")
		}
		if v.maxBytes > 0 && art.SizeBytes > v.maxBytes {
			return newError(ErrArtifactIntegrity, ReasonArtifactTooLarge, "the artifact is larger than the worker's advertised limit")
		}
		v.artifact = &art
		v.data = make([]byte, 0, min(art.SizeBytes, 1<<20))
	case *pb.DownloadArtifactResponse_Chunk:
		if v.artifact == nil {
			return newError(ErrProtocolViolation, ReasonArtifactStreamOrder, "the download did not start with metadata")
		}
		if uint64(len(v.data))+uint64(len(part.Chunk)) > v.artifact.SizeBytes {
			return newError(ErrArtifactIntegrity, ReasonArtifactSizeMismatch, "the download sent more bytes than declared")
		}
		v.hash.Write(part.Chunk)
		v.data = append(v.data, part.Chunk...)
	default:
		return newError(ErrProtocolViolation, ReasonArtifactStreamOrder, "the download sent an empty message")
	}
	return nil
}

func (v *downloadVerifier) finish() (*DownloadedArtifact, error) {
	if v.artifact == nil {
		return nil, newError(ErrProtocolViolation, ReasonArtifactStreamOrder, "the download ended before its metadata")
	}
	if uint64(len(v.data)) != v.artifact.SizeBytes {
		return nil, newError(ErrArtifactIntegrity, ReasonArtifactSizeMismatch, "the download ended before all declared bytes")
	}
	sum := hex.EncodeToString(v.hash.Sum(nil))
	if subtle.ConstantTimeCompare([]byte(sum), []byte(v.artifact.SHA256)) != 1 {
		return nil, newError(ErrArtifactIntegrity, ReasonArtifactDigestMismatch, "the downloaded bytes do not match the declared SHA-256")
	}
	return &DownloadedArtifact{Artifact: *v.artifact, Data: v.data}, nil
}

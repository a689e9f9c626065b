//! The request cap (C7): every request message is measured against the worker's advertised
//! `max_request_bytes` before it is sent, and uploads are cut into chunks that fit it.

use prost::Message;

use crate::model::ServerInfo;
use crate::{Error, Kind, Result, reasons};

/// Upload chunk size when the worker advertises none.
const DEFAULT_CHUNK_BYTES: usize = 64 * 1024;
/// gRPC framing of a message: compression flag and length.
const FRAME_BYTES: u64 = 5;
/// A chunk message's own framing (field tag and length).
const CHUNK_FRAMING: u64 = 6;

/// C7: a message over the advertised request cap is refused before anything is sent.
/// The cap counts the encoded message, not gRPC's 5-byte length prefix, and is inclusive:
/// a message of exactly `limit` bytes is sent (as the worker and the Go SDK count it;
/// conformance limits.request-exactly-at-advertised-cap).
pub(crate) fn check_cap(info: &ServerInfo, message: &impl Message) -> Result<()> {
    let limit = info.limits.max_request_bytes;
    let size = message.encoded_len() as u64;
    if limit > 0 && size > limit {
        return Err(Error::local(
            Kind::ResourceExhausted,
            reasons::REQUEST_TOO_LARGE,
            format!("the request is {size} bytes; the worker accepts {limit}"),
        )
        .with_metadata("limit", limit.to_string()));
    }
    Ok(())
}

/// Upload chunks fit both the advertised chunk cap and the request cap.
pub(crate) fn chunk_bytes(info: &ServerInfo) -> usize {
    let l = &info.limits;
    let mut chunk = if l.max_artifact_chunk_bytes > 0 {
        u64::from(l.max_artifact_chunk_bytes)
    } else {
        DEFAULT_CHUNK_BYTES as u64
    };
    let framing = FRAME_BYTES + CHUNK_FRAMING;
    if l.max_request_bytes > framing {
        chunk = chunk.min(l.max_request_bytes - framing);
    }
    chunk.clamp(1, 1 << 30) as usize
}

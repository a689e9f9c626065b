//! The WatchRun codec: each received event with the exact bytes it arrived in.
//!
//! A watch compares a replayed event with the one it delivered (S1). prost drops the
//! fields it does not know, so comparing a re-encoding of the decoded event would miss a
//! replay that differs only in a field newer than this SDK. This codec decodes the
//! `WatchRunResponse` as prost does and keeps, beside it, the bytes of its `event` field as
//! received: those are what the watch compares.

use prost::Message;
use prost::bytes::Buf;
use prost::encoding::{WireType, decode_key, decode_varint};
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic_prost::ProstEncoder;

use crate::proto;

/// `WatchRunResponse.event`'s field number.
const EVENT_FIELD: u32 = 1;

/// One `WatchRunResponse` and the received encoding of its event.
#[derive(Debug)]
pub(crate) struct ReceivedEvent {
    pub(crate) event: Option<proto::RunEvent>,
    /// The bytes of the `event` field as they arrived (every occurrence, in order, as
    /// protobuf merges repeated occurrences of a message field).
    pub(crate) content: Vec<u8>,
}

/// The codec of `RunService.WatchRun`: prost's encoder for the request, [`ReceivedEvent`]
/// for each response.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct WatchCodec;

impl Codec for WatchCodec {
    type Encode = proto::WatchRunRequest;
    type Decode = ReceivedEvent;
    type Encoder = ProstEncoder<proto::WatchRunRequest>;
    type Decoder = WatchDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        WatchDecoder
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct WatchDecoder;

impl Decoder for WatchDecoder {
    type Item = ReceivedEvent;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<ReceivedEvent>, Status> {
        let bytes = buf.copy_to_bytes(buf.remaining());
        decode(&bytes).map(Some)
    }
}

/// Decodes one `WatchRunResponse` message and picks out its event's received bytes.
pub(crate) fn decode(message: &[u8]) -> Result<ReceivedEvent, Status> {
    let decoded =
        proto::WatchRunResponse::decode(message).map_err(|e| Status::internal(e.to_string()))?;
    Ok(ReceivedEvent {
        event: decoded.event,
        content: event_bytes(message).map_err(Status::internal)?,
    })
}

/// The payload bytes of every `event` field of a `WatchRunResponse`, in order; the other
/// fields are skipped. Only called on a message prost has just decoded.
fn event_bytes(mut message: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while message.has_remaining() {
        let (field, wire) = decode_key(&mut message).map_err(|e| e.to_string())?;
        match wire {
            WireType::LengthDelimited => {
                let len = usize::try_from(varint(&mut message)?)
                    .map_err(|_| "length out of range".to_owned())?;
                if len > message.len() {
                    return Err("buffer underflow".into());
                }
                if field == EVENT_FIELD {
                    out.extend_from_slice(&message[..len]);
                }
                message.advance(len);
            }
            WireType::Varint => {
                varint(&mut message)?;
            }
            WireType::SixtyFourBit => skip(&mut message, 8)?,
            WireType::ThirtyTwoBit => skip(&mut message, 4)?,
            WireType::StartGroup | WireType::EndGroup => {
                return Err("groups are not used by the contract".into());
            }
        }
    }
    Ok(out)
}

fn varint(message: &mut &[u8]) -> Result<u64, String> {
    decode_varint(message).map_err(|e| e.to_string())
}

fn skip(message: &mut &[u8], n: usize) -> Result<(), String> {
    if message.len() < n {
        return Err("buffer underflow".into());
    }
    message.advance(n);
    Ok(())
}

#[cfg(test)]
mod tests;

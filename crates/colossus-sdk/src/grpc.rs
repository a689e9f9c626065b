//! The gRPC [`Backend`]: the contract's calls over a verified session.
//!
//! The session (pinned TLS 1.3 channel, checked GetServerInfo answer, bearer) comes from
//! the transport through a [`SessionSource`]: a daemon's is fixed, a sidecar's restarts
//! its worker when it exited. This module adds what every call needs on the wire: the
//! authorization header, the request cap ([`crate::request_cap`]), the response cap and
//! the error mapping of [`crate::status`]. Retries, the watch rules and integrity checks
//! are the client's.

use std::sync::Arc;

use futures_util::StreamExt;
use prost::Message;
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;

use crate::backend::{Backend, BoxFuture, BoxStream, WatchedEvent};
use crate::convert;
use crate::event_codec::{ReceivedEvent, WatchCodec};
use crate::model::{
    Answer, Artifact, ArtifactManifest, CreateRunRequest, CreateRunResult, DownloadPart,
    ListRunsQuery, Run, RunPage, ServerInfo,
};
use crate::proto;
use crate::proto::artifact_service_client::ArtifactServiceClient;
use crate::proto::run_service_client::RunServiceClient;
use crate::request_cap::{check_cap, chunk_bytes};
use crate::status::{self, CallKind};
use crate::{Error, Kind, Result, reasons};

/// One verified connection to a worker.
pub(crate) trait GrpcSession: Send + Sync + 'static {
    /// The channel; every connection it makes goes through the pinned connector.
    fn channel(&self) -> Channel;
    /// The checked GetServerInfo answer.
    fn server_info(&self) -> &ServerInfo;
    /// Adds `authorization: Bearer …`, marked sensitive.
    fn authorize(&self, metadata: &mut MetadataMap) -> Result<()>;
    /// The inbound message cap in force (C7).
    fn max_response_bytes(&self) -> usize;
}

/// Where the gRPC backend gets its current session.
pub(crate) trait SessionSource: Send + Sync + 'static {
    /// The session to use now (for a sidecar, after a restart when the worker exited).
    fn current(&self) -> BoxFuture<'_, Result<Arc<dyn GrpcSession>>>;
    /// Closes the connection (and stops a sidecar).
    fn close(&self);
}

/// The gRPC backend over a [`SessionSource`].
pub(crate) struct GrpcBackend {
    sessions: Box<dyn SessionSource>,
}

impl GrpcBackend {
    pub(crate) fn new(sessions: impl SessionSource) -> Self {
        GrpcBackend {
            sessions: Box::new(sessions),
        }
    }

    async fn session(&self) -> Result<Arc<dyn GrpcSession>> {
        self.sessions.current().await
    }
}

/// An authorized request, refused locally when it is over the advertised request cap.
fn request<T: Message>(session: &dyn GrpcSession, message: T) -> Result<tonic::Request<T>> {
    check_cap(session.server_info(), &message)?;
    let mut req = tonic::Request::new(message);
    session.authorize(req.metadata_mut())?;
    Ok(req)
}

fn runs(session: &dyn GrpcSession) -> RunServiceClient<Channel> {
    RunServiceClient::new(session.channel())
        .max_decoding_message_size(session.max_response_bytes())
        .max_encoding_message_size(usize::MAX)
}

/// `RunService.WatchRun` as the generated client sends it, through [`WatchCodec`], which
/// keeps each event's received bytes.
async fn watch_call(
    session: &dyn GrpcSession,
    req: tonic::Request<proto::WatchRunRequest>,
) -> std::result::Result<tonic::codec::Streaming<ReceivedEvent>, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(session.channel())
        .max_decoding_message_size(session.max_response_bytes())
        .max_encoding_message_size(usize::MAX);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unknown(format!("Service was not ready: {e}")))?;
    let path = http::uri::PathAndQuery::from_static("/colossus.api.v1alpha1.RunService/WatchRun");
    let mut req = req;
    req.extensions_mut().insert(tonic::GrpcMethod::new(
        "colossus.api.v1alpha1.RunService",
        "WatchRun",
    ));
    Ok(grpc
        .server_streaming(req, path, WatchCodec)
        .await?
        .into_inner())
}

fn artifacts(session: &dyn GrpcSession) -> ArtifactServiceClient<Channel> {
    ArtifactServiceClient::new(session.channel())
        .max_decoding_message_size(session.max_response_bytes())
        .max_encoding_message_size(usize::MAX)
}

fn malformed(what: &str) -> Error {
    Error::local(
        Kind::ProtocolViolation,
        reasons::RESPONSE_MALFORMED,
        format!("the worker's answer has no {what}"),
    )
}

fn run_of(run: Option<proto::Run>) -> Result<Run> {
    run.as_ref()
        .map(convert::run)
        .ok_or_else(|| malformed("run"))
}

fn read_err(s: tonic::Status) -> Error {
    status::map(&s, CallKind::Read, None)
}

fn mutation_err(s: tonic::Status) -> Error {
    status::map(&s, CallKind::Mutation, None)
}

impl Backend for GrpcBackend {
    fn server_info(&self) -> BoxFuture<'_, Result<ServerInfo>> {
        Box::pin(async move { Ok(self.session().await?.server_info().clone()) })
    }

    fn create_run<'a>(
        &'a self,
        request_: &'a CreateRunRequest,
    ) -> BoxFuture<'a, Result<CreateRunResult>> {
        Box::pin(async move {
            let key = request_.idempotency_key();
            let s = self.session().await?;
            let req = request(&*s, convert::create_request(request_))?;
            let resp = runs(&*s)
                .create_run(req)
                .await
                .map_err(|e| status::map(&e, CallKind::Mutation, Some(key)))?
                .into_inner();
            Ok(CreateRunResult::new(run_of(resp.run)?, resp.replayed, key))
        })
    }

    fn get_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Run>> {
        Box::pin(async move {
            let s = self.session().await?;
            let req = request(
                &*s,
                proto::GetRunRequest {
                    run_id: run_id.into(),
                },
            )?;
            let resp = runs(&*s).get_run(req).await.map_err(read_err)?;
            run_of(resp.into_inner().run)
        })
    }

    fn list_runs<'a>(&'a self, query: &'a ListRunsQuery) -> BoxFuture<'a, Result<RunPage>> {
        Box::pin(async move {
            let s = self.session().await?;
            let req = request(&*s, convert::list_request(query))?;
            let resp = runs(&*s)
                .list_runs(req)
                .await
                .map_err(read_err)?
                .into_inner();
            let token = Some(resp.next_page_token).filter(|t| !t.is_empty());
            Ok(RunPage::new(
                resp.runs.iter().map(convert::run).collect(),
                token,
            ))
        })
    }

    fn watch_run<'a>(
        &'a self,
        run_id: &'a str,
        after_sequence: u64,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchedEvent>>>> {
        Box::pin(async move {
            let s = self.session().await?;
            let req = request(
                &*s,
                proto::WatchRunRequest {
                    run_id: run_id.into(),
                    after_sequence,
                },
            )?;
            let stream = watch_call(&*s, req).await.map_err(read_err)?;
            let events = stream.map(|item| {
                let received = item.map_err(read_err)?;
                let event = received.event.ok_or_else(|| malformed("event"))?;
                // The replay comparison is the event's bytes as received, fields newer
                // than this SDK included (prost's decoding drops those).
                Ok(WatchedEvent::with_content(
                    convert::event(event),
                    received.content,
                ))
            });
            Ok(Box::pin(events) as BoxStream<'static, _>)
        })
    }

    fn cancel_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Run>> {
        Box::pin(async move {
            let s = self.session().await?;
            let req = request(
                &*s,
                proto::CancelRunRequest {
                    run_id: run_id.into(),
                },
            )?;
            let resp = runs(&*s).cancel_run(req).await.map_err(mutation_err)?;
            run_of(resp.into_inner().run)
        })
    }

    fn respond<'a>(
        &'a self,
        run_id: &'a str,
        interaction_id: &'a str,
        answer: &'a Answer,
    ) -> BoxFuture<'a, Result<Run>> {
        Box::pin(async move {
            let s = self.session().await?;
            let req = request(
                &*s,
                convert::respond_request(run_id, interaction_id, answer),
            )?;
            let resp = runs(&*s)
                .respond_interaction(req)
                .await
                .map_err(mutation_err)?;
            run_of(resp.into_inner().run)
        })
    }

    fn upload_artifact<'a>(
        &'a self,
        manifest: &'a ArtifactManifest,
        data: &'a [u8],
    ) -> BoxFuture<'a, Result<Artifact>> {
        Box::pin(async move {
            use proto::upload_artifact_request::Part;
            let s = self.session().await?;
            let chunk = chunk_bytes(s.server_info());
            let mut parts = vec![proto::UploadArtifactRequest {
                part: Some(Part::Manifest(convert::manifest(manifest))),
            }];
            parts.extend(data.chunks(chunk).map(|c| proto::UploadArtifactRequest {
                part: Some(Part::Chunk(c.to_vec())),
            }));
            // Every message of the stream is held to the cap, the manifest first: a
            // refused upload is not even a call.
            for part in &parts {
                check_cap(s.server_info(), part)?;
            }
            let mut req = tonic::Request::new(tokio_stream::iter(parts));
            s.authorize(req.metadata_mut())?;
            let resp = artifacts(&*s)
                .upload_artifact(req)
                .await
                .map_err(mutation_err)?
                .into_inner();
            resp.artifact
                .as_ref()
                .map(convert::artifact)
                .ok_or_else(|| malformed("artifact"))
        })
    }

    fn download_artifact<'a>(
        &'a self,
        artifact_id: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<DownloadPart>>>> {
        Box::pin(async move {
            use proto::download_artifact_response::Part;
            let s = self.session().await?;
            let req = request(
                &*s,
                proto::DownloadArtifactRequest {
                    artifact_id: artifact_id.into(),
                },
            )?;
            let stream = artifacts(&*s)
                .download_artifact(req)
                .await
                .map_err(read_err)?
                .into_inner();
            let parts = stream.map(|item| match item.map_err(read_err)?.part {
                Some(Part::Artifact(a)) => Ok(DownloadPart::Artifact(convert::artifact(&a))),
                Some(Part::Chunk(c)) => Ok(DownloadPart::Chunk(c)),
                None => Err(Error::local(
                    Kind::ProtocolViolation,
                    reasons::ARTIFACT_STREAM_ORDER,
                    "the download sent an empty message",
                )),
            });
            Ok(Box::pin(parts) as BoxStream<'static, _>)
        })
    }

    fn close(&self) {
        self.sessions.close();
    }
}

#[cfg(test)]
mod tests;

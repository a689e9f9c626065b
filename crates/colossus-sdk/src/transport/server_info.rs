//! GetServerInfo, the first call on every session (C6): authenticated, bounded by the
//! connect timeout, and checked against the target before the session is used.

use tonic::transport::Channel;

use super::Target;
use super::verifier::TrustState;
use crate::convert;
use crate::model::ServerInfo;
use crate::options::ClientOptions;
use crate::proto::GetServerInfoRequest;
use crate::proto::system_service_client::SystemServiceClient;
use crate::retry::connect_with_retries;
use crate::status::{self, CallKind};
use crate::trust::bearer::Bearer;
use crate::{Error, Kind, Result, reasons};

/// The contract's package; the only one this SDK speaks.
pub(crate) const API_PACKAGE: &str = "colossus.api.v1alpha1";

/// GetServerInfo, authenticated; an `UNAVAILABLE` answer is retried under the client's
/// retry policy like any read (each retry is a new call; tonic reconnects through the
/// pinned connector, so a trust refusal on the way ends the loop at once). As for the
/// connect itself, a refused reconnect (the worker went away) ends it at once too.
pub(super) async fn fetch(
    channel: &Channel,
    bearer: &Bearer,
    options: &ClientOptions,
    trust: &TrustState,
) -> Result<ServerInfo> {
    connect_with_retries("GetServerInfo", *options.retry(), || {
        fetch_once(channel, bearer, options, trust)
    })
    .await
}

async fn fetch_once(
    channel: &Channel,
    bearer: &Bearer,
    options: &ClientOptions,
    trust: &TrustState,
) -> Result<ServerInfo> {
    let mut req = tonic::Request::new(GetServerInfoRequest {});
    super::authorize_with(bearer, req.metadata_mut())?;
    req.set_timeout(options.connect_timeout());
    let mut client = SystemServiceClient::new(channel.clone())
        .max_decoding_message_size(options.max_response_bytes());
    let resp = client.get_server_info(req).await.map_err(|s| {
        if let Some(v) = trust.violation() {
            return v.to_error();
        }
        status::map(&s, CallKind::Read, None)
    })?;
    let info = resp.into_inner().server_info.ok_or_else(|| {
        Error::local(
            Kind::ProtocolViolation,
            reasons::RESPONSE_MALFORMED,
            "GetServerInfo answered without server_info",
        )
    })?;
    Ok(convert::server_info(&info))
}

/// C6: the answer must name the provisioned instance, the contract, its major version and
/// the expected placement. The metadata `fields` lists every member that differs.
pub(super) fn verify(info: &ServerInfo, target: &Target) -> Result<()> {
    let mut problems = Vec::new();
    if info.instance_id != target.instance_id {
        problems.push("instance_id");
    }
    if info.api_package != API_PACKAGE {
        problems.push("api_package");
    }
    if info.api_major != target.api_major {
        problems.push("api_major");
    }
    if info.deployment_mode != target.mode {
        problems.push("deployment_mode");
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::local(
        Kind::IncompatibleServer,
        reasons::SERVER_INFO_MISMATCH,
        format!("GetServerInfo disagrees with the expected worker: {problems:?}"),
    )
    .with_metadata("fields", problems.join(",")))
}

//! The raw side: the generated stubs on a channel through the SDK's own connector (same
//! endpoint settings, pinned TLS 1.3, bearer header, the same receive cap, no retries),
//! and none of the SDK's work around it.

use std::hint::black_box;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use tonic::Request;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;

use colossus_sdk::__bench::{pb, raw_channel};

use crate::AnyResult;
use crate::rounds::{Probe, RoundResult, process_cpu};
use crate::worker::DevWorker;

pub(crate) const RECEIVE_CAP: usize = 4 << 20;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The raw side: the generated stubs on a channel through the SDK's connector.
pub(crate) struct Raw {
    runs: pb::RunServiceClient<Channel>,
    bearer: String,
}

fn authorized<T>(message: T, bearer: &str) -> AnyResult<Request<T>> {
    let mut req = Request::new(message);
    let mut value: MetadataValue<_> = format!("Bearer {bearer}").parse()?;
    value.set_sensitive(true);
    req.metadata_mut().insert("authorization", value);
    Ok(req)
}

impl Raw {
    pub(crate) async fn dial(dir: &Path, pin: &str, bearer: &str) -> AnyResult<Raw> {
        let channel = raw_channel(read_endpoint(dir)?, pin, CONNECT_TIMEOUT).await?;
        Ok(Raw {
            runs: pb::RunServiceClient::new(channel).max_decoding_message_size(RECEIVE_CAP),
            bearer: bearer.to_owned(),
        })
    }

    /// WatchRun from the start until the worker ends the stream.
    pub(crate) async fn watch(&self, run_id: &str, probe: Probe<'_>) -> AnyResult<RoundResult> {
        let (start, cpu) = (Instant::now(), process_cpu());
        let req = pb::WatchRunRequest {
            run_id: run_id.to_owned(),
            after_sequence: 0,
        };
        let mut stream = self
            .runs
            .clone()
            .watch_run(authorized(req, &self.bearer)?)
            .await?
            .into_inner();
        let (mut events, mut last) = (0, start);
        while let Some(message) = stream.message().await? {
            black_box(message);
            events += 1;
            last = Instant::now();
            probe(events);
        }
        Ok(RoundResult {
            events,
            elapsed: start.elapsed(),
            to_last: last - start,
            cpu: process_cpu() - cpu,
        })
    }
}

/// A new raw channel plus one GetServerInfo, from reading endpoint.json on.
pub(crate) async fn raw_connect_once(worker: &DevWorker) -> AnyResult<Duration> {
    let start = Instant::now();
    let addr = read_endpoint(&worker.dir.0)?;
    let channel = raw_channel(addr, &worker.pin, CONNECT_TIMEOUT).await?;
    let info = pb::SystemServiceClient::new(channel)
        .max_decoding_message_size(RECEIVE_CAP)
        .get_server_info(authorized(pb::GetServerInfoRequest {}, &worker.bearer)?)
        .await?;
    black_box(info);
    Ok(start.elapsed())
}

/// The address endpoint.json names (the raw side reads it without the SDK's checks).
fn read_endpoint(dir: &Path) -> AnyResult<SocketAddr> {
    let data = std::fs::read(dir.join("endpoint.json"))?;
    let d: serde_json::Value = serde_json::from_slice(&data)?;
    let endpoint = d["endpoint"]
        .as_str()
        .ok_or("endpoint.json has no endpoint")?;
    Ok(endpoint
        .strip_prefix("https://")
        .ok_or("the endpoint is not https")?
        .parse()?)
}

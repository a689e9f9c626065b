//! One case instruction: its connections (opened on first use), its steps in order, and
//! the references between them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use colossus_sdk::backend::BoxFuture;
use colossus_sdk::credentials::CredentialProvider;
use colossus_sdk::model::{
    Answer, ApprovalDecision, CreateRunRequest, DeploymentMode, EvidenceLane, InputPart,
    ListRunsQuery, PlanAction, PlanActionKind, ResearchOptions, RunMode, RunStatus,
};
use colossus_sdk::options::ClientOptions;
use colossus_sdk::placement::{DaemonOptions, SidecarOptions};
use colossus_sdk::{Bearer, Client, Kind};
use futures_util::StreamExt as _;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::Protocol;
use crate::errors::{StepError, error_view, log_text, unsupported};
use crate::views::{artifact_view, event_view, run_view, server_info_view};

type StepResult = Result<Value, (Option<Value>, StepError)>;

/// The options every connection of this client uses: a 15 s call timeout and a 10 s
/// connect timeout, as the other clients; the retry policy stays the SDK's default.
fn client_options() -> ClientOptions {
    ClientOptions::builder()
        .timeout(Some(Duration::from_secs(15)))
        .connect_timeout(Duration::from_secs(10))
        .build()
        .expect("valid client options")
}

/// The retry budget the connections actually use (the SDK's default policy, shared by
/// reads and watch reconnects).
pub(crate) fn retry_budget() -> Value {
    let options = client_options();
    let policy = options.retry();
    json!({
        "read_attempts": policy.max_attempts(),
        "watch_attempts": policy.max_attempts(),
        "watch_elapsed_seconds": policy.max_elapsed().map(|d| d.as_secs_f64()),
    })
}

/// Hands the SDK the bearer as given (the SDK judges it) and counts how often it asks, so
/// the runner can prove C5. A failing one errs as a broken keyring would, with the bearer in
/// its message: the SDK must report a credential failure without repeating that text.
struct CountingProvider {
    bearer: String,
    failing: bool,
    calls: AtomicU64,
}

impl std::fmt::Debug for CountingProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CountingProvider(<redacted>)")
    }
}

#[derive(Debug)]
struct KeyringRefused(String);

impl std::fmt::Display for KeyringRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the keyring daemon refused the entry {}", self.0)
    }
}

impl std::error::Error for KeyringRefused {}

/// The SDK holds its own handle; the case keeps another to read the count.
struct SharedProvider(Arc<CountingProvider>);

impl CredentialProvider for SharedProvider {
    fn bearer(&self) -> BoxFuture<'_, colossus_sdk::Result<Bearer>> {
        let p = &self.0;
        p.calls.fetch_add(1, Ordering::SeqCst);
        let answer = if p.failing {
            // Not a credential error of the SDK's: the SDK must classify it itself.
            let refused = KeyringRefused(p.bearer.clone());
            Err(
                colossus_sdk::Error::local(Kind::Internal, "KEYRING", refused.to_string())
                    .with_source(refused),
            )
        } else {
            // The SDK's Bearer type judges the value (the malformed ones of C5 are refused
            // here, when the SDK asks, after the trust checks and before any RPC).
            Bearer::new(p.bearer.clone())
        };
        Box::pin(async move { answer })
    }
}

pub(crate) struct CaseRun {
    instruction: Value,
    specs: HashMap<String, Value>,
    order: Vec<String>,
    bearers: HashMap<String, Vec<u8>>,
    clients: HashMap<String, Client>,
    providers: HashMap<String, Arc<CountingProvider>>,
    results: HashMap<String, Value>,
    /// Calls of a step's provider when its sync point was released, by step id.
    calls_at_release: HashMap<String, u64>,
}

impl CaseRun {
    pub(crate) fn new(instruction: Value, bearers: HashMap<String, Vec<u8>>) -> Self {
        let mut specs = HashMap::new();
        let mut order = Vec::new();
        for spec in instruction["connections"].as_array().into_iter().flatten() {
            let name = spec["name"].as_str().unwrap_or_default().to_owned();
            specs.insert(name.clone(), spec.clone());
            order.push(name);
        }
        CaseRun {
            instruction,
            specs,
            order,
            bearers,
            clients: HashMap::new(),
            providers: HashMap::new(),
            results: HashMap::new(),
            calls_at_release: HashMap::new(),
        }
    }

    fn case_name(&self) -> String {
        self.instruction["case"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn conn_name(&self, args: &Map<String, Value>) -> String {
        match args.get("conn").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => self.order.first().cloned().unwrap_or_default(),
        }
    }

    /// The calls of a daemon connection's provider so far; `None` for other placements.
    fn credential_calls(&self, name: &str) -> Option<u64> {
        let spec = self.specs.get(name)?;
        if spec["placement"] != "daemon" {
            return None;
        }
        Some(
            self.providers
                .get(name)
                .map_or(0, |p| p.calls.load(Ordering::SeqCst)),
        )
    }

    /// Closes every connection the case opened.
    pub(crate) async fn close(&mut self) {
        for (_, client) in self.clients.drain() {
            client.close();
        }
    }

    /// Performs every step in order; Err is a problem of the protocol (a sync point).
    pub(crate) async fn run(&mut self, protocol: &mut Protocol) -> Result<Vec<Value>, String> {
        let steps = self.instruction["steps"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut reports = Vec::with_capacity(steps.len());
        for step in steps {
            let id = step["id"].as_str().unwrap_or_default().to_owned();
            let op = step["op"].as_str().unwrap_or_default().to_owned();
            let mut report = json!({"id": id, "op": op});
            let started = Instant::now();
            let raw_args = step["args"].as_object().cloned().unwrap_or_default();
            let name = self.conn_name(&raw_args);
            let counted = op != "sleep" && op != "sync";
            let before = if counted {
                self.credential_calls(&name)
            } else {
                None
            };
            let opened_before = self.providers.contains_key(&name);
            match resolve(&Value::Object(raw_args), &self.results) {
                Err(reference) => {
                    report["error"] = json!({
                        "kind": "unresolved_reference", "message": format!("cannot resolve {reference}"),
                    });
                }
                Ok(args) => {
                    let args = args.as_object().cloned().unwrap_or_default();
                    // No deadline of the client's own: the runner bounds the case (and the
                    // time it spends acting at a sync point does not count against it).
                    let outcome = self.perform(&op, &id, &args, &mut report, protocol).await;
                    match outcome {
                        Ok(value) => report["value"] = value,
                        Err((value, StepError::Protocol(problem))) => {
                            if let Some(value) = value {
                                report["value"] = value;
                            }
                            return Err(problem);
                        }
                        Err((value, err)) => {
                            eprintln!("rust-client: step {id} failed: {}", log_text(&err));
                            let mut value = value;
                            if let StepError::Sdk(e) = &err
                                && let Some(key) = e.idempotency_key()
                            {
                                let v = value.get_or_insert_with(|| json!({}));
                                v["idempotency_key"] = json!(key);
                            }
                            if let Some(value) = value {
                                report["value"] = value;
                            }
                            report["error"] = error_view(&err);
                        }
                    }
                }
            }
            if let Some(before) = before {
                // A close of a connection never opened reports nothing.
                if !(op == "close" && !opened_before && !self.providers.contains_key(&name)) {
                    let after = self.credential_calls(&name).unwrap_or(0);
                    report["credential_calls"] = json!(after - before);
                    if let Some(at_release) = self.calls_at_release.get(&id) {
                        report["credential_calls_after_sync"] = json!(after - at_release);
                    }
                }
            }
            report["elapsed_ms"] = json!(started.elapsed().as_secs_f64() * 1000.0);
            self.results.insert(id, report.clone());
            reports.push(report);
        }
        Ok(reports)
    }

    /// The SDK client of a connection, opened by its first use.
    async fn client(&mut self, name: &str) -> Result<&Client, StepError> {
        if !self.clients.contains_key(name) {
            let spec = self
                .specs
                .get(name)
                .cloned()
                .ok_or_else(|| unsupported(format!("unknown connection {name}")))?;
            let client = if spec["placement"] == "sidecar" {
                let command = strings(&spec["worker_command"]);
                let Some((executable, extra)) = command.split_first() else {
                    return Err(unsupported("empty worker_command"));
                };
                let grant = &spec["grant"];
                let options = SidecarOptions::builder(
                    executable,
                    spec["application_id"].as_str().unwrap_or_default(),
                )
                .client_options(client_options())
                .extra_args(extra.to_vec())
                .scopes(strings(&grant["scopes"]))
                .roles(strings(&grant["roles"]))
                .tools(strings(&grant["tools"]))
                .state_dir(spec["state_dir"].as_str().unwrap_or_default())
                .build()?;
                Client::start_sidecar(options).await?
            } else {
                let provider = self
                    .providers
                    .entry(name.to_owned())
                    .or_insert_with(|| {
                        let bearer = self.bearers.get(name).cloned().unwrap_or_default();
                        Arc::new(CountingProvider {
                            bearer: String::from_utf8_lossy(&bearer).into_owned(),
                            failing: spec["credential_provider"] == "failing",
                            calls: AtomicU64::new(0),
                        })
                    })
                    .clone();
                let mode = match spec["expected_deployment_mode"].as_str() {
                    None | Some("") => DeploymentMode::SharedDaemon,
                    Some(text) => parse_deployment_mode(text)?,
                };
                let options = DaemonOptions::builder()
                    .client_options(client_options())
                    .public_api_dir(spec["public_api_dir"].as_str().unwrap_or_default())
                    .expected_instance_id(spec["expected_instance_id"].as_str().unwrap_or_default())
                    .expected_certificate_sha256(
                        spec["expected_certificate_sha256"]
                            .as_str()
                            .unwrap_or_default(),
                    )
                    .expected_deployment_mode(mode)
                    .credentials(SharedProvider(provider))
                    .build()?;
                Client::connect(options).await?
            };
            self.clients.insert(name.to_owned(), client);
        }
        Ok(&self.clients[name])
    }

    async fn perform(
        &mut self,
        op: &str,
        id: &str,
        args: &Map<String, Value>,
        report: &mut Value,
        protocol: &mut Protocol,
    ) -> StepResult {
        let name = self.conn_name(args);
        match op {
            "sleep" => {
                let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
                tokio::time::sleep(Duration::from_secs_f64(seconds.max(0.0))).await;
                return Ok(json!({}));
            }
            "sync" => {
                protocol
                    .wait_for_release(&self.case_name(), id)
                    .await
                    .map_err(|e| (Some(json!({})), StepError::Protocol(e)))?;
                return Ok(json!({}));
            }
            "close" => {
                if let Some(client) = self.clients.remove(&name) {
                    client.close();
                }
                return Ok(json!({}));
            }
            _ => {}
        }
        let client = self.client(&name).await.map_err(|e| (None, e))?.clone();
        let fail = |e: colossus_sdk::Error| (None, StepError::Sdk(e));
        match op {
            "connect" => {
                let info = client.server_info().await.map_err(fail)?;
                Ok(json!({"server_info": server_info_view(&info)}))
            }
            "create_run" => create_run(&client, args).await,
            "get_run" => {
                let run = client
                    .runs()
                    .get(&arg_str(args, "run_id"))
                    .await
                    .map_err(fail)?;
                Ok(json!({"run": run_view(&run)}))
            }
            "cancel_run" => {
                let run = client
                    .runs()
                    .cancel(&arg_str(args, "run_id"))
                    .await
                    .map_err(fail)?;
                Ok(json!({"run": run_view(&run)}))
            }
            "respond" => {
                let answer = match args.get("choice") {
                    Some(choice) => Answer::choice(text_of(choice)),
                    None => {
                        let decision = match args.get("decision").map(text_of).as_deref() {
                            None | Some("APPROVE") => ApprovalDecision::Approve,
                            Some("DENY") => ApprovalDecision::Deny,
                            Some(other) => {
                                return Err((None, unsupported(format!("decision {other}"))));
                            }
                        };
                        Answer::approval(arg_str(args, "binding"), decision)
                    }
                };
                let run = client
                    .runs()
                    .respond(
                        &arg_str(args, "run_id"),
                        &arg_str(args, "interaction_id"),
                        answer,
                    )
                    .await
                    .map_err(fail)?;
                Ok(json!({"run": run_view(&run)}))
            }
            "list_runs" => list_runs(&client, args).await,
            "watch" => self.watch(&client, id, args, report, protocol).await,
            "wait_run" => {
                let watcher = with_idle_timeout(&client, args).map_err(|e| (None, e))?;
                let run = watcher
                    .runs()
                    .wait(&arg_str(args, "run_id"))
                    .await
                    .map_err(fail)?;
                Ok(json!({"run": run_view(&run)}))
            }
            "text_stream" => text_stream(&client, args).await,
            "upload_artifact" => {
                let data = upload_bytes(args).map_err(|e| (None, e))?;
                let media_type = arg_str(args, "media_type");
                let artifacts = client.artifacts();
                let artifact = match args.get("display_name") {
                    Some(name) => {
                        artifacts
                            .upload_named(&data, &media_type, &text_of(name))
                            .await
                    }
                    None => artifacts.upload(&data, &media_type).await,
                }
                .map_err(fail)?;
                Ok(json!({"artifact": artifact_view(&artifact)}))
            }
            "download_artifact" => {
                let got = client
                    .artifacts()
                    .download(&arg_str(args, "artifact_id"))
                    .await
                    .map_err(fail)?;
                let digest = Sha256::digest(&got.data);
                Ok(json!({
                    "artifact": artifact_view(&got.artifact),
                    "size": got.data.len(),
                    "sha256": hex(&digest),
                }))
            }
            other => Err((None, unsupported(format!("op {other}")))),
        }
    }

    async fn watch(
        &mut self,
        client: &Client,
        id: &str,
        args: &Map<String, Value>,
        report: &mut Value,
        protocol: &mut Protocol,
    ) -> StepResult {
        let until = args.get("until_kind").map(text_of);
        let limit = arg_u64(args, "max_events").map_err(|e| (None, e))?;
        let sync_after = arg_u64(args, "sync_after_events").map_err(|e| (None, e))?;
        let after = match arg_u64(args, "after_sequence") {
            Ok(after) => after.unwrap_or(0),
            Err(e) => {
                return Err((
                    Some(json!({"events": [], "completed": false, "reconnects": 0})),
                    e,
                ));
            }
        };
        let watcher = with_idle_timeout(client, args).map_err(|e| (None, e))?;
        let hooks: Arc<std::sync::Mutex<Vec<Value>>> = Arc::default();
        let mut stream = watcher.runs().watch_after(&arg_str(args, "run_id"), after).on_reconnect({
            let hooks = hooks.clone();
            move |info| {
                hooks.lock().unwrap().push(json!({
                    "hook": "reconnect", "after_sequence": info.after_sequence, "attempt": info.attempt,
                }));
            }
        });
        let mut events: Vec<Value> = Vec::new();
        let mut stopped_early = false;
        let mut failure: Option<StepError> = None;
        while let Some(item) = stream.next().await {
            let event = match item {
                Ok(event) => event,
                Err(e) => {
                    failure = Some(e.into());
                    break;
                }
            };
            events.push(event_view(&event));
            if sync_after.is_some_and(|k| k > 0 && events.len() as u64 == k) {
                // The sync point: the runner acts on the worker while this same stream waits.
                if let Err(problem) = protocol.wait_for_release(&self.case_name(), id).await {
                    failure = Some(StepError::Protocol(problem));
                    break;
                }
                let calls = self.credential_calls(&self.conn_name(args)).unwrap_or(0);
                self.calls_at_release.insert(id.to_owned(), calls);
            }
            let last_kind = events.last().map(|e| e["kind"].clone()).unwrap_or_default();
            if until.as_deref().is_some_and(|k| last_kind == k)
                || limit.is_some_and(|n| n > 0 && events.len() as u64 >= n)
            {
                stopped_early = true;
                break;
            }
        }
        drop(stream);
        let hooks = hooks.lock().unwrap().clone();
        let value = json!({
            "events": events,
            "completed": failure.is_none() && !stopped_early,
            "reconnects": hooks.len(),
        });
        if !hooks.is_empty() {
            report["hooks"] = json!(hooks);
        }
        match failure {
            None => Ok(value),
            Some(err) => Err((Some(value), err)),
        }
    }
}

/// A handle on the same connection whose watches (the step's own, or the one a helper
/// opens) use the step's `idle_timeout_seconds` (default 20).
fn with_idle_timeout(client: &Client, args: &Map<String, Value>) -> Result<Client, StepError> {
    let idle = args
        .get("idle_timeout_seconds")
        .and_then(Value::as_f64)
        .unwrap_or(20.0);
    let options = ClientOptions::builder()
        .timeout(client.options().timeout())
        .connect_timeout(client.options().connect_timeout())
        .rate_limit_retries(client.options().rate_limit_retries())
        .watch_idle_timeout(Some(Duration::from_secs_f64(idle.max(0.0))))
        .build()?;
    Ok(client.with_options(options))
}

async fn text_stream(client: &Client, args: &Map<String, Value>) -> StepResult {
    let after = arg_u64(args, "after_sequence")
        .map_err(|e| (None, e))?
        .unwrap_or(0);
    let watcher = with_idle_timeout(client, args).map_err(|e| (None, e))?;
    let mut stream = watcher
        .runs()
        .text_stream_after(&arg_str(args, "run_id"), after);
    let mut texts: Vec<String> = Vec::new();
    while let Some(piece) = stream.next().await {
        match piece {
            Ok(text) => texts.push(text),
            Err(e) => return Err((Some(json!({"texts": texts, "completed": false})), e.into())),
        }
    }
    Ok(json!({"texts": texts, "completed": true}))
}

async fn create_run(client: &Client, args: &Map<String, Value>) -> StepResult {
    let mut request = CreateRunRequest::builder();
    for part in args
        .get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        request = match part.get("text") {
            Some(Value::String(text)) => request.text(text.clone()),
            _ => {
                let artifact_id = arg_str(part.as_object().unwrap_or(&Map::new()), "artifact_id");
                match part.get("media_type") {
                    Some(mt) => {
                        request.part(InputPart::artifact_with_type(artifact_id, text_of(mt)))
                    }
                    None => request.part(InputPart::artifact(artifact_id)),
                }
            }
        };
    }
    let bad = |e: StepError| (None, e);
    if let Some(key) = args.get("idempotency_key") {
        request = request.idempotency_key(text_of(key));
    }
    if let Some(role) = args.get("role") {
        request = request.role(text_of(role));
    }
    if let Some(session) = args.get("session_id") {
        request = request.session_id(text_of(session));
    }
    if let Some(user) = args.get("end_user_id") {
        request = request.end_user_id(text_of(user));
    }
    if let Some(tp) = args.get("traceparent") {
        let ts = args.get("tracestate").map(text_of).unwrap_or_default();
        request = request.trace_context(text_of(tp), ts);
    }
    if let Some(mode) = args.get("mode") {
        request = request.mode(parse_run_mode(&text_of(mode)).map_err(bad)?);
    }
    if let Some(n) = arg_u64(args, "max_turns").map_err(bad)? {
        let n = u32::try_from(n).map_err(|_| bad(unsupported("max_turns does not fit u32")))?;
        request = request.max_turns(n);
    }
    if let Some(Value::Object(pa)) = args.get("plan_action") {
        let revision = arg_u64(pa, "revision").map_err(bad)?.unwrap_or(0);
        let kind = parse_plan_action_kind(&arg_str(pa, "kind")).map_err(bad)?;
        request = request.plan_action(PlanAction::new(
            arg_str(pa, "source_run_id"),
            revision,
            kind,
        ));
    }
    if let Some(Value::Object(r)) = args.get("research") {
        let depth = arg_u64(r, "depth").map_err(bad)?.unwrap_or(0);
        let depth = u32::try_from(depth).map_err(|_| bad(unsupported("depth does not fit u32")))?;
        let mut lanes = Vec::new();
        for lane in strings(r.get("lanes").unwrap_or(&Value::Null)) {
            lanes.push(parse_evidence_lane(&lane).map_err(bad)?);
        }
        request = request.research(ResearchOptions::new(depth, lanes));
    }
    // The SDK's opt-in retry of a rate-limited create, on a handle with that option.
    let mut creator = client.clone();
    if let Some(n) = arg_u64(args, "rate_limit_retries").map_err(bad)? {
        let n = u32::try_from(n)
            .map_err(|_| bad(unsupported("rate_limit_retries does not fit u32")))?;
        let options = ClientOptions::builder()
            .timeout(client.options().timeout())
            .connect_timeout(client.options().connect_timeout())
            .watch_idle_timeout(client.options().watch_idle_timeout())
            .rate_limit_retries(n)
            .build()
            .map_err(|e| bad(e.into()))?;
        creator = client.with_options(options);
    }
    let request = request.build();
    match creator.runs().create(request).await {
        Ok(created) => Ok(json!({
            "run": run_view(&created.run),
            "replayed": created.replayed,
            "idempotency_key": created.idempotency_key,
        })),
        // The key as the SDK's error reports it (none when it dropped it): a case checks it.
        Err(e) => Err((
            Some(json!({"idempotency_key": e.idempotency_key()})),
            e.into(),
        )),
    }
}

async fn list_runs(client: &Client, args: &Map<String, Value>) -> StepResult {
    let bad = |e: StepError| (None, e);
    let mut statuses = Vec::new();
    for s in strings(args.get("statuses").unwrap_or(&Value::Null)) {
        statuses.push(parse_run_status(&s).map_err(bad)?);
    }
    let mut query = ListRunsQuery::new().statuses(statuses);
    if let Some(n) = arg_u64(args, "page_size").map_err(bad)? {
        let n = u32::try_from(n).map_err(|_| bad(unsupported("page_size does not fit u32")))?;
        query = query.page_size(n);
    }
    if let Some(Value::String(token)) = args.get("page_token")
        && !token.is_empty()
    {
        query = query.with_page_token(token.clone());
    }
    let max_pages = arg_u64(args, "max_pages").map_err(bad)?.unwrap_or(1000);
    let create_after = strings(args.get("create_after_first_page").unwrap_or(&Value::Null));
    let mut run_ids: Vec<String> = Vec::new();
    let mut statuses: Vec<String> = Vec::new();
    let mut created: Vec<String> = Vec::new();
    let mut pages: u64 = 0;
    let mut next_token = String::new();
    let mut stopped = false;
    let mut failure = None;
    let mut stream = client.runs().pages(query);
    while let Some(page) = stream.next().await {
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        pages += 1;
        for run in &page.runs {
            run_ids.push(run.run_id.clone());
            statuses.push(run.status.as_str().to_owned());
        }
        next_token = page.next_page_token.clone().unwrap_or_default();
        if pages == 1 {
            for text in &create_after {
                match client
                    .runs()
                    .create(CreateRunRequest::text(text.clone()))
                    .await
                {
                    Ok(res) => created.push(res.run.run_id),
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
            if failure.is_some() {
                break;
            }
        }
        if pages >= max_pages {
            stopped = true;
            break;
        }
    }
    let view = json!({
        "run_ids": run_ids, "statuses": statuses, "created_run_ids": created, "pages": pages,
        "stopped_at_max_pages": stopped, "next_page_token": next_token,
    });
    match failure {
        None => Ok(view),
        Some(e) => Err((Some(view), e.into())),
    }
}

fn upload_bytes(args: &Map<String, Value>) -> Result<Vec<u8>, StepError> {
    if let Some(Value::String(text)) = args.get("text") {
        return Ok(text.as_bytes().to_vec());
    }
    if let Some(Value::String(b64)) = args.get("data_base64") {
        return base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| unsupported("data_base64 is not base64"));
    }
    let size = arg_u64(args, "size_bytes")?.unwrap_or(0);
    let size = usize::try_from(size).map_err(|_| unsupported("size_bytes does not fit usize"))?;
    Ok((0..size).map(|i| (i % 251) as u8).collect())
}

/// Replaces `"$step.path"` strings with values from earlier steps' reports; Err names the
/// reference that did not resolve.
pub(crate) fn resolve(v: &Value, results: &HashMap<String, Value>) -> Result<Value, String> {
    match v {
        Value::String(s) if s.len() >= 2 && s.starts_with('$') => {
            let mut parts = s[1..].split('.');
            let step = parts.next().unwrap_or_default();
            let mut current = results
                .get(step)
                .and_then(|r| r.get("value"))
                .ok_or_else(|| s.clone())?;
            for seg in parts {
                current = descend(current, seg).ok_or_else(|| s.clone())?;
            }
            if current.is_null() {
                return Err(s.clone());
            }
            Ok(current.clone())
        }
        Value::Array(items) => items
            .iter()
            .map(|i| resolve(i, results))
            .collect::<Result<_, _>>()
            .map(Value::Array),
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, item) in map {
                out.insert(k.clone(), resolve(item, results)?);
            }
            Ok(Value::Object(out))
        }
        other => Ok(other.clone()),
    }
}

/// One path segment: a member of an object, or an index into a list (negative from the end).
fn descend<'a>(node: &'a Value, seg: &str) -> Option<&'a Value> {
    match node {
        Value::Object(map) => map.get(seg),
        Value::Array(list) => {
            let i: i64 = seg.parse().ok()?;
            let len = list.len() as i64;
            let i = if i < 0 { i + len } else { i };
            if (0..len).contains(&i) {
                list.get(i as usize)
            } else {
                None
            }
        }
        _ => None,
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().map(text_of).collect()
}

/// A value as text, as given: strings unchanged, numbers and others in their JSON form.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn arg_str(args: &Map<String, Value>, key: &str) -> String {
    args.get(key).map(text_of).unwrap_or_default()
}

/// A non-negative integer argument; a value the SDK's API cannot hold (negative, fractional,
/// beyond u64) is unsupported.
fn arg_u64(args: &Map<String, Value>, key: &str) -> Result<Option<u64>, StepError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| {
            unsupported(format!("{key} {n} does not fit an unsigned 64-bit integer"))
        }),
        Some(other) => Err(unsupported(format!("{key} {other} is not a number"))),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a contract enum by its name; a name the SDK's enum has no variant for cannot be
/// expressed.
macro_rules! parser {
    ($fn:ident, $ty:ty, [$($v:ident),* $(,)?]) => {
        fn $fn(text: &str) -> Result<$ty, StepError> {
            [$(<$ty>::$v),*]
                .into_iter()
                .find(|v| v.as_str() == text)
                .ok_or_else(|| unsupported(format!("{} {text:?}", stringify!($ty))))
        }
    };
}

parser!(
    parse_run_mode,
    RunMode,
    [Unspecified, Execute, Plan, Research]
);
parser!(
    parse_deployment_mode,
    DeploymentMode,
    [Unspecified, SharedDaemon, Sidecar]
);
parser!(
    parse_plan_action_kind,
    PlanActionKind,
    [Unspecified, Revise, ExecuteDirect, ExecuteGoal]
);
parser!(
    parse_evidence_lane,
    EvidenceLane,
    [Unspecified, Repository, Web, Mcp]
);
parser!(
    parse_run_status,
    RunStatus,
    [
        Unspecified,
        Queued,
        Running,
        WaitingForInput,
        Cancelling,
        Succeeded,
        Failed,
        Cancelled,
        Interrupted,
        OutcomeUnknown,
    ]
);

//! [`TargetManager`]: the native map from opaque target IDs to authenticated SDK clients,
//! the Work selection with its epoch, the selection writer, run bindings and per-target
//! watch limits.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use colossus_sdk::Client;
use colossus_sdk::placement::{DaemonOptions, SidecarOptions};
use tokio::sync::{OwnedRwLockReadGuard, RwLock, Semaphore, watch};

use crate::dto::TargetDto;
use crate::error::ErrorKind;
use crate::external::SharedCredentials;
use crate::{BridgeError, ConfirmExternal, ExternalTarget, TargetHealth, TargetId, TargetKind};

/// How many watches each target may serve at once unless set otherwise (the worker's
/// per-application watch limit is 8; this leaves room for the Fleet window and native
/// callers).
pub const DEFAULT_WATCHES_PER_TARGET: usize = 4;
/// How many run IDs each target remembers as bound before forgetting the oldest.
pub const DEFAULT_BOUND_RUNS_PER_TARGET: usize = 4096;

/// The manager's limits and its External confirmation hook.
#[derive(Clone)]
#[non_exhaustive]
pub struct ManagerOptions {
    /// Concurrent watches per target.
    pub watches_per_target: usize,
    /// Remembered run bindings per target.
    pub bound_runs_per_target: usize,
    confirm: Option<Arc<dyn ConfirmExternal>>,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            watches_per_target: DEFAULT_WATCHES_PER_TARGET,
            bound_runs_per_target: DEFAULT_BOUND_RUNS_PER_TARGET,
            confirm: None,
        }
    }
}

impl std::fmt::Debug for ManagerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerOptions")
            .field("watches_per_target", &self.watches_per_target)
            .field("bound_runs_per_target", &self.bound_runs_per_target)
            .field("confirm", &self.confirm.is_some())
            .finish()
    }
}

impl ManagerOptions {
    /// Sets the concurrent watches per target (at least 1).
    pub fn watches_per_target(mut self, n: usize) -> Self {
        self.watches_per_target = n.max(1);
        self
    }

    /// Sets the remembered run bindings per target (at least 1).
    pub fn bound_runs_per_target(mut self, n: usize) -> Self {
        self.bound_runs_per_target = n.max(1);
        self
    }

    /// The native dialog External targets need. Without one, External targets cannot be
    /// added, selected, reconnected or removed.
    pub fn confirm_external(mut self, hook: impl ConfirmExternal) -> Self {
        self.confirm = Some(Arc::new(hook));
        self
    }
}

/// The Work selection and its epoch, published to every watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Selection {
    pub(crate) target: Option<TargetId>,
    pub(crate) epoch: u64,
}

struct Entry {
    kind: TargetKind,
    label: String,
    health: TargetHealth,
    client: Client,
    approvals: Option<Client>,
    external: Option<ExternalTarget>,
    watches: Arc<Semaphore>,
    bound: HashSet<String>,
    bound_order: VecDeque<String>,
}

struct Inner {
    options: ManagerOptions,
    targets: Mutex<BTreeMap<TargetId, Entry>>,
    /// The selection writer: mutations hold it shared, a switch, reconnect or removal
    /// holds it exclusively, so it waits for in-flight mutations and none start
    /// meanwhile.
    writer: Arc<RwLock<()>>,
    selection: watch::Sender<Selection>,
}

/// The native target manager. Cheap to clone; clones share state.
///
/// Targets are added natively (never by the renderer) and known to the renderer only by
/// opaque ID, kind, label and health. One target is the Work selection: every run
/// operation must name it, and changing it takes the selection writer.
#[derive(Clone)]
pub struct TargetManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TargetManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TargetManager")
            .field("targets", &self.lock().len())
            .finish_non_exhaustive()
    }
}

impl Default for TargetManager {
    fn default() -> Self {
        Self::new()
    }
}

/// The selected target, resolved for one operation.
pub(crate) struct Work {
    pub(crate) id: TargetId,
    pub(crate) kind: TargetKind,
    pub(crate) client: Client,
    pub(crate) approvals: Option<Client>,
    pub(crate) epoch: u64,
}

impl TargetManager {
    /// A manager with the default limits and no External confirmation hook.
    pub fn new() -> TargetManager {
        Self::with_options(ManagerOptions::default())
    }

    /// A manager with these options.
    pub fn with_options(options: ManagerOptions) -> TargetManager {
        let (selection, _) = watch::channel(Selection {
            target: None,
            epoch: 0,
        });
        TargetManager {
            inner: Arc::new(Inner {
                options,
                targets: Mutex::new(BTreeMap::new()),
                writer: Arc::new(RwLock::new(())),
                selection,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<TargetId, Entry>> {
        self.inner.targets.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn insert(
        &self,
        kind: TargetKind,
        label: String,
        client: Client,
        external: Option<ExternalTarget>,
        health: TargetHealth,
    ) -> TargetId {
        let id = TargetId::random();
        self.lock().insert(
            id.clone(),
            Entry {
                kind,
                label,
                health,
                client,
                approvals: None,
                external,
                watches: Arc::new(Semaphore::new(self.inner.options.watches_per_target)),
                bound: HashSet::new(),
                bound_order: VecDeque::new(),
            },
        );
        id
    }

    /// Adds an Embedded target over `client` (an in-process runtime behind the SDK's
    /// interface).
    pub async fn add_embedded(&self, label: impl Into<String>, client: Client) -> TargetId {
        self.insert(
            TargetKind::Embedded,
            label.into(),
            client,
            None,
            TargetHealth::Unknown,
        )
    }

    /// Starts the Managed Local sidecar for the active workspace and adds it. There is at
    /// most one: remove the old one first. The options must bind the start to the
    /// executable's digest ([`SidecarOptionsBuilder::executable_sha256`]): the SDK then runs
    /// exactly the verified bytes (a sealed memory file on Linux) and fails closed where it
    /// cannot.
    ///
    /// [`SidecarOptionsBuilder::executable_sha256`]: colossus_sdk::placement::SidecarOptionsBuilder::executable_sha256
    pub async fn add_managed_local(
        &self,
        label: impl Into<String>,
        options: SidecarOptions,
    ) -> Result<TargetId, BridgeError> {
        if options.executable_sha256().is_none() {
            return Err(BridgeError::new(
                ErrorKind::FailedPrecondition,
                "executable_not_bound",
            ));
        }
        if self
            .lock()
            .values()
            .any(|e| e.kind == TargetKind::ManagedLocal)
        {
            return Err(BridgeError::new(
                ErrorKind::FailedPrecondition,
                "managed_local_exists",
            ));
        }
        let client = Client::start_sidecar(options).await?;
        Ok(self.insert(
            TargetKind::ManagedLocal,
            label.into(),
            client,
            None,
            TargetHealth::Ready,
        ))
    }

    /// Adds an External daemon after the native confirmation names its label, instance ID
    /// and full pin. Declined: nothing is connected and nothing is added.
    pub async fn add_external(&self, target: ExternalTarget) -> Result<TargetId, BridgeError> {
        self.confirm(&target, "import").await?;
        let client = connect_external(&target).await?;
        Ok(self.insert(
            TargetKind::External,
            target.label.clone(),
            client,
            Some(target),
            TargetHealth::Ready,
        ))
    }

    /// Routes approval answers of `target` through a separate client holding only
    /// `approvals:respond` (the native approval broker); every other operation keeps the
    /// primary client.
    pub fn set_approval_client(
        &self,
        target: &TargetId,
        client: Client,
    ) -> Result<(), BridgeError> {
        let mut targets = self.lock();
        let entry = targets.get_mut(target).ok_or_else(unknown_target)?;
        entry.approvals = Some(client);
        Ok(())
    }

    async fn confirm(
        &self,
        target: &ExternalTarget,
        action: &'static str,
    ) -> Result<(), BridgeError> {
        let hook = self
            .inner
            .options
            .confirm
            .clone()
            .ok_or_else(|| BridgeError::new(ErrorKind::Declined, "no_confirmation_hook"))?;
        if hook.confirm(target.confirmation(action)).await {
            Ok(())
        } else {
            Err(BridgeError::new(ErrorKind::Declined, "declined"))
        }
    }

    fn external_of(&self, id: &TargetId) -> Result<Option<ExternalTarget>, BridgeError> {
        let targets = self.lock();
        let entry = targets.get(id).ok_or_else(unknown_target)?;
        Ok(entry.external.clone())
    }

    /// Makes `target` the Work selection. Takes the selection writer: waits for in-flight
    /// mutations, lets none start meanwhile, and ends every watch of the previous
    /// selection (the epoch moves on) before any operation can reach the new one. An
    /// External target needs the native confirmation first.
    pub async fn select(&self, target: &TargetId) -> Result<u64, BridgeError> {
        if let Some(external) = self.external_of(target)? {
            self.confirm(&external, "select").await?;
        }
        let _writer = self.inner.writer.write().await;
        if !self.lock().contains_key(target) {
            return Err(unknown_target());
        }
        Ok(self.publish(Some(target.clone())))
    }

    fn publish(&self, target: Option<TargetId>) -> u64 {
        let mut epoch = 0;
        self.inner.selection.send_modify(|s| {
            s.epoch += 1;
            s.target = target;
            epoch = s.epoch;
        });
        epoch
    }

    /// Replaces an External target's client with a fresh connection (after the native
    /// confirmation), under the selection writer. Nothing in flight is replayed; watches
    /// of the old connection end when the target was selected.
    pub async fn reconnect(&self, target: &TargetId) -> Result<(), BridgeError> {
        let external = self
            .external_of(target)?
            .ok_or_else(|| BridgeError::new(ErrorKind::Unsupported, "not_external"))?;
        self.confirm(&external, "reconnect").await?;
        let _writer = self.inner.writer.write().await;
        let client = connect_external(&external).await;
        let selected = self.selected().as_ref() == Some(target);
        {
            let mut targets = self.lock();
            let entry = targets.get_mut(target).ok_or_else(unknown_target)?;
            match &client {
                Ok(client) => {
                    entry.client.close();
                    entry.client = client.clone();
                    entry.health = TargetHealth::Ready;
                }
                Err(e) => entry.health = health_after(e),
            }
        }
        if selected {
            self.publish(Some(target.clone()));
        }
        client.map(|_| ())
    }

    /// Removes a target and closes its client, under the selection writer. An External
    /// target needs the native confirmation first; removing the selection leaves none.
    pub async fn remove(&self, target: &TargetId) -> Result<(), BridgeError> {
        if let Some(external) = self.external_of(target)? {
            self.confirm(&external, "remove").await?;
        }
        let _writer = self.inner.writer.write().await;
        let entry = self.lock().remove(target).ok_or_else(unknown_target)?;
        if self.selected().as_ref() == Some(target) {
            self.publish(None);
        }
        entry.client.close();
        if let Some(approvals) = entry.approvals {
            approvals.close();
        }
        Ok(())
    }

    /// The Work selection.
    pub fn selected(&self) -> Option<TargetId> {
        self.inner.selection.borrow().target.clone()
    }

    /// Every target as Fleet shows it, in ID order.
    pub fn targets(&self) -> Vec<TargetDto> {
        let selected = self.selected();
        self.lock()
            .iter()
            .map(|(id, e)| TargetDto {
                target_id: id.clone(),
                kind: e.kind,
                label: e.label.clone(),
                health: e.health,
                selected: selected.as_ref() == Some(id),
            })
            .collect()
    }

    /// Asks every target for its server information and records the sanitized health.
    pub async fn check_health(&self) {
        let clients: Vec<(TargetId, Client)> = self
            .lock()
            .iter()
            .map(|(id, e)| (id.clone(), e.client.clone()))
            .collect();
        for (id, client) in clients {
            let result = client
                .server_info()
                .await
                .map(|_| ())
                .map_err(BridgeError::from);
            self.note(&id, &result, true);
        }
    }

    /// Records what a call says about a target's health. Request-level refusals say
    /// nothing about the target.
    pub(crate) fn note<T>(&self, id: &TargetId, result: &Result<T, BridgeError>, probe: bool) {
        let health = match result {
            Ok(_) => TargetHealth::Ready,
            Err(e) if probe || e.is_target_fault() => health_after(e),
            Err(_) => return,
        };
        if let Some(entry) = self.lock().get_mut(id) {
            entry.health = health;
        }
    }

    /// The selected target named by a read operation, or why not.
    pub(crate) fn work(&self, target_id: &str) -> Result<Work, BridgeError> {
        let id = crate::input::target_id(target_id)?;
        let selection = self.inner.selection.borrow().clone();
        let targets = self.lock();
        let entry = targets.get(&id).ok_or_else(unknown_target)?;
        if selection.target.as_ref() != Some(&id) {
            return Err(BridgeError::new(ErrorKind::NotSelected, "not_selected"));
        }
        Ok(Work {
            id,
            kind: entry.kind,
            client: entry.client.clone(),
            approvals: entry.approvals.clone(),
            epoch: selection.epoch,
        })
    }

    /// As [`work`](Self::work) for a mutation: holds the selection writer shared for as
    /// long as the guard lives, and resolves the selection only once it holds it, so a
    /// switch that was waiting has finished and a stale target ID is refused, not
    /// replayed against the new selection.
    pub(crate) async fn mutation(
        &self,
        target_id: &str,
    ) -> Result<(OwnedRwLockReadGuard<()>, Work), BridgeError> {
        crate::input::target_id(target_id)?;
        let guard = self.inner.writer.clone().read_owned().await;
        let work = self.work(target_id)?;
        Ok((guard, work))
    }

    /// Binds a run ID to the target that created or listed it.
    pub(crate) fn bind(&self, id: &TargetId, run_id: &str) {
        let cap = self.inner.options.bound_runs_per_target;
        if let Some(entry) = self.lock().get_mut(id)
            && entry.bound.insert(run_id.to_owned())
        {
            entry.bound_order.push_back(run_id.to_owned());
            while entry.bound_order.len() > cap {
                if let Some(old) = entry.bound_order.pop_front() {
                    entry.bound.remove(&old);
                }
            }
        }
    }

    /// Refuses a run ID this target did not create or list.
    pub(crate) fn require_bound(&self, id: &TargetId, run_id: &str) -> Result<(), BridgeError> {
        let targets = self.lock();
        let entry = targets.get(id).ok_or_else(unknown_target)?;
        if entry.bound.contains(run_id) {
            Ok(())
        } else {
            Err(BridgeError::new(ErrorKind::RunNotBound, "run_not_bound"))
        }
    }

    /// A watch slot of the target, or the watch-limit refusal.
    pub(crate) fn watch_permit(
        &self,
        id: &TargetId,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, BridgeError> {
        let semaphore = self
            .lock()
            .get(id)
            .map(|e| e.watches.clone())
            .ok_or_else(unknown_target)?;
        semaphore
            .try_acquire_owned()
            .map_err(|_| BridgeError::new(ErrorKind::WatchLimit, "watch_limit").retryable())
    }

    pub(crate) fn selection_receiver(&self) -> watch::Receiver<Selection> {
        self.inner.selection.subscribe()
    }
}

fn unknown_target() -> BridgeError {
    BridgeError::new(ErrorKind::UnknownTarget, "unknown_target")
}

fn health_after(e: &BridgeError) -> TargetHealth {
    if e.retryable || matches!(e.kind, ErrorKind::Unavailable | ErrorKind::DeadlineExceeded) {
        TargetHealth::Unavailable(e.kind)
    } else if e.kind == ErrorKind::Closed {
        TargetHealth::Closed
    } else {
        TargetHealth::Failed(e.kind)
    }
}

async fn connect_external(target: &ExternalTarget) -> Result<Client, BridgeError> {
    let options = DaemonOptions::builder()
        .public_api_dir(target.public_api_dir.clone())
        .expected_instance_id(target.instance_id.clone())
        .expected_certificate_sha256(target.certificate_sha256.clone())
        .credentials(SharedCredentials(target.credentials.clone()))
        .build()?;
    Ok(Client::connect(options).await?)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use colossus_sdk::embedded::EmbeddedRuntime;

    use super::*;

    // B5: the selection writer waits for in-flight mutations, and a mutation that was
    // waiting for a switch is refused against the new selection rather than replayed.
    #[tokio::test]
    async fn a_switch_waits_for_in_flight_mutations_and_never_replays_one() {
        let manager = TargetManager::new();
        let a = manager
            .add_embedded("a", Client::embedded(EmbeddedRuntime::new()))
            .await;
        let b = manager
            .add_embedded("b", Client::embedded(EmbeddedRuntime::new()))
            .await;
        manager.select(&a).await.unwrap();

        let (in_flight, work) = manager.mutation(a.as_str()).await.unwrap();
        assert_eq!(work.id, a);
        let switch = tokio::spawn({
            let manager = manager.clone();
            let b = b.clone();
            async move { manager.select(&b).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!switch.is_finished(), "the switch waits for the mutation");
        assert_eq!(manager.selected(), Some(a.clone()));
        drop(in_flight);
        switch.await.unwrap().unwrap();
        assert_eq!(manager.selected(), Some(b.clone()));

        // A mutation for the old selection is refused, not sent to the new one.
        let stale = manager.mutation(a.as_str()).await.err().unwrap();
        assert_eq!(stale.kind, ErrorKind::NotSelected);
    }

    #[tokio::test]
    async fn bindings_are_bounded_per_target() {
        let manager =
            TargetManager::with_options(ManagerOptions::default().bound_runs_per_target(2));
        let a = manager
            .add_embedded("a", Client::embedded(EmbeddedRuntime::new()))
            .await;
        for run in ["r1", "r2", "r3"] {
            manager.bind(&a, run);
        }
        assert!(manager.require_bound(&a, "r1").is_err());
        assert!(manager.require_bound(&a, "r3").is_ok());
    }

    // B2: without a confirmation hook, or when the user declines, no External target is
    // connected or added.
    #[tokio::test]
    async fn external_targets_need_the_native_confirmation_with_label_instance_and_pin() {
        use std::sync::Mutex as StdMutex;

        use colossus_sdk::Bearer;
        use colossus_sdk::credentials::InMemoryCredentialProvider;

        let pin = "0123456789abcdef".repeat(4);
        let bearer = Bearer::new("cb1_".to_owned() + &"q".repeat(43)).unwrap();
        let target = ExternalTarget::new(
            "Build server",
            "/nonexistent/colossus/public-api",
            "inst_build",
            pin.clone(),
            InMemoryCredentialProvider::new(bearer),
        );

        let none = TargetManager::new();
        let err = none.add_external(target.clone()).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Declined);
        assert!(none.targets().is_empty());

        let shown: Arc<StdMutex<Vec<String>>> = Arc::default();
        let seen = shown.clone();
        let declining = TargetManager::with_options(ManagerOptions::default().confirm_external(
            move |c: crate::ExternalConfirmation<'_>| {
                seen.lock().unwrap().push(format!(
                    "{} {} {} {}",
                    c.action, c.label, c.instance_id, c.certificate_sha256
                ));
                false
            },
        ));
        let err = declining.add_external(target.clone()).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Declined);
        assert!(declining.targets().is_empty());
        assert_eq!(
            shown.lock().unwrap().as_slice(),
            [format!("import Build server inst_build {pin}")]
        );

        // Accepted: the SDK's daemon connector runs its own checks (here: no descriptor),
        // and the refusal crosses without the path.
        let accepting = TargetManager::with_options(
            ManagerOptions::default().confirm_external(|_: crate::ExternalConfirmation<'_>| true),
        );
        let err = accepting.add_external(target).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Trust);
        let text = serde_json::to_string(&err).unwrap();
        assert!(
            !text.contains("nonexistent") && !text.contains(&pin),
            "{text}"
        );
        assert!(accepting.targets().is_empty());
    }
}

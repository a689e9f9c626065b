//! [`Bridge`]: the product operations, each checking its closed input, the Work selection
//! and the run binding before it reaches an SDK client.

use colossus_sdk::model::{
    Answer, CreateRunRequest, InteractionKind, ListRunsQuery, PlanAction, ResearchOptions, RunMode,
};

use crate::dto::{RunDto, RunPageDto, TargetDto};
use crate::error::ErrorKind;
use crate::input::{
    self, AnswerInput, CreateRunInput, ListRunsInput, ModeInput, RespondInput, RunRef, WatchInput,
};
use crate::{
    BridgeError, ReleaseChannel, RunWatch, TargetKind, TargetManager, desktop_release_channel,
};

/// The operations a renderer may call, over one [`TargetManager`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Bridge {
    targets: TargetManager,
}

impl Bridge {
    /// A bridge over `targets`.
    pub fn new(targets: TargetManager) -> Bridge {
        Bridge { targets }
    }

    /// The target manager (native code adds, selects and removes targets through it).
    pub fn targets(&self) -> &TargetManager {
        &self.targets
    }

    /// `list_targets`: every target with its sanitized health, for Fleet and Work.
    pub fn list_targets(&self) -> Vec<TargetDto> {
        self.targets.targets()
    }

    /// `desktop_release_channel`: the compile-time channel; no input.
    pub fn desktop_release_channel(&self) -> ReleaseChannel {
        desktop_release_channel()
    }

    /// `create_run`: an Execute, Plan or Research run, or a plan action on a Draft of an
    /// earlier Plan run of the same target. Sent once under the selection writer; an
    /// unknown outcome is reported, never replayed.
    pub async fn create_run(&self, input: CreateRunInput) -> Result<RunDto, BridgeError> {
        input::text(&input.text)?;
        let mut builder = CreateRunRequest::builder().text(input.text);
        let mut source = None;
        let mut research = false;
        match input.mode {
            ModeInput::Execute => builder = builder.mode(RunMode::Execute),
            ModeInput::Plan => builder = builder.mode(RunMode::Plan),
            ModeInput::Research { depth, lanes } => {
                let (depth, lanes) = input::research(depth, &lanes)?;
                research = true;
                builder = builder
                    .mode(RunMode::Research)
                    .research(ResearchOptions::new(depth, lanes));
            }
            ModeInput::PlanAction {
                source_run_id,
                revision,
                action,
            } => {
                input::opaque_id(&source_run_id, "mode.source_run_id")?;
                let revision = input::decimal(&revision, "mode.revision")?;
                let kind = input::plan_action(action);
                let mode = match action {
                    input::PlanActionInput::Revise => RunMode::Plan,
                    _ => RunMode::Execute,
                };
                builder = builder.mode(mode).plan_action(PlanAction::new(
                    source_run_id.clone(),
                    revision,
                    kind,
                ));
                source = Some(source_run_id);
            }
        }
        let (_writer, work) = self.targets.mutation(&input.target_id).await?;
        if research && work.kind == TargetKind::External {
            return Err(BridgeError::new(
                ErrorKind::Unsupported,
                "research_needs_managed_local",
            ));
        }
        if let Some(source) = &source {
            self.targets.require_bound(&work.id, source)?;
        }
        let result = work
            .client
            .runs()
            .create(builder.build())
            .await
            .map_err(BridgeError::from);
        self.targets.note(&work.id, &result, false);
        let created = result?;
        self.targets.bind(&work.id, &created.run.run_id);
        Ok(RunDto::new(&work.id, &created.run))
    }

    /// `get_run`: a run bound to the selected target.
    pub async fn get_run(&self, input: RunRef) -> Result<RunDto, BridgeError> {
        input::opaque_id(&input.run_id, "run_id")?;
        let work = self.targets.work(&input.target_id)?;
        self.targets.require_bound(&work.id, &input.run_id)?;
        let result = work
            .client
            .runs()
            .get(&input.run_id)
            .await
            .map_err(BridgeError::from);
        self.targets.note(&work.id, &result, false);
        Ok(RunDto::new(&work.id, &result?))
    }

    /// `list_runs`: one page of the selected target's runs; every run listed is bound to
    /// it.
    pub async fn list_runs(&self, input: ListRunsInput) -> Result<RunPageDto, BridgeError> {
        let statuses = input::statuses(&input.statuses)?;
        input::page(input.page_size, input.page_token.as_deref())?;
        let work = self.targets.work(&input.target_id)?;
        let mut query = ListRunsQuery::new()
            .statuses(statuses)
            .page_size(input.page_size.unwrap_or(0));
        if let Some(token) = input.page_token {
            query = query.with_page_token(token);
        }
        let result = work
            .client
            .runs()
            .list_page(&query)
            .await
            .map_err(BridgeError::from);
        self.targets.note(&work.id, &result, false);
        let page = result?;
        for run in &page.runs {
            self.targets.bind(&work.id, &run.run_id);
        }
        Ok(RunPageDto::new(&work.id, &page))
    }

    /// `watch_run`: the run's ordered feed, bound to the selected target and its current
    /// selection epoch, within the target's watch limit.
    pub async fn watch_run(&self, input: WatchInput) -> Result<RunWatch, BridgeError> {
        input::opaque_id(&input.run_id, "run_id")?;
        let after = input
            .after_sequence
            .as_deref()
            .map(|s| input::decimal(s, "after_sequence"))
            .transpose()?;
        let work = self.targets.work(&input.target_id)?;
        self.targets.require_bound(&work.id, &input.run_id)?;
        let permit = self.targets.watch_permit(&work.id)?;
        let runs = work.client.runs();
        let stream = match after {
            Some(after) => runs.watch_after(&input.run_id, after),
            None => runs.watch(&input.run_id),
        };
        Ok(RunWatch::new(
            work.id,
            work.epoch,
            stream,
            self.targets.selection_receiver(),
            permit,
        ))
    }

    /// `cancel_run`: asks the selected target to cancel a bound run, once.
    pub async fn cancel_run(&self, input: RunRef) -> Result<RunDto, BridgeError> {
        input::opaque_id(&input.run_id, "run_id")?;
        let (_writer, work) = self.targets.mutation(&input.target_id).await?;
        self.targets.require_bound(&work.id, &input.run_id)?;
        let result = work
            .client
            .runs()
            .cancel(&input.run_id)
            .await
            .map_err(BridgeError::from);
        self.targets.note(&work.id, &result, false);
        Ok(RunDto::new(&work.id, &result?))
    }

    /// `respond_interaction`: answers a bound run's pending interaction, once. A prompt
    /// answer echoes a choice; an approval answer carries only the decision, and the
    /// one-use binding is taken natively from the interaction the target reports (and
    /// sent through the approval client when the target has one).
    pub async fn respond_interaction(&self, input: RespondInput) -> Result<RunDto, BridgeError> {
        input::opaque_id(&input.run_id, "run_id")?;
        input::opaque_id(&input.interaction_id, "interaction_id")?;
        if let AnswerInput::Choice { choice } = &input.answer {
            input::choice(choice)?;
        }
        let (_writer, work) = self.targets.mutation(&input.target_id).await?;
        self.targets.require_bound(&work.id, &input.run_id)?;
        let (client, answer) = match input.answer {
            AnswerInput::Choice { choice } => (work.client.clone(), Answer::choice(choice)),
            AnswerInput::Approval { decision } => {
                let run = work
                    .client
                    .runs()
                    .get(&input.run_id)
                    .await
                    .map_err(BridgeError::from)?;
                let binding = run
                    .pending_interaction
                    .filter(|i| i.interaction_id == input.interaction_id)
                    .and_then(|i| match i.kind {
                        InteractionKind::Approval(a) => Some(a.binding),
                        _ => None,
                    })
                    .ok_or_else(|| {
                        BridgeError::new(ErrorKind::FailedPrecondition, "no_pending_approval")
                    })?;
                let client = work
                    .approvals
                    .clone()
                    .unwrap_or_else(|| work.client.clone());
                (client, Answer::approval(binding, decision.into()))
            }
        };
        let result = client
            .runs()
            .respond(&input.run_id, &input.interaction_id, answer)
            .await
            .map_err(BridgeError::from);
        self.targets.note(&work.id, &result, false);
        Ok(RunDto::new(&work.id, &result?))
    }
}

//! One run's program: [`Exec`] plays a run script step by step (or echoes the input,
//! drafts a plan, collects research evidence), records each event in the store, and ends
//! the run with its status and result.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, oneshot};

use super::script::Step;
use super::store::{RunState, Store, new_id, push};
use super::tools;
use crate::model::{
    ActionClass, Answer, Approval, ApprovalDecision, CreateRunRequest, EventPayload, Interaction,
    InteractionKind, InteractionOutcome, PlanResult, PlanStatus, Prompt, RunFailure, RunMode,
    RunResult, RunStatus, ToolActivityPhase,
};

/// How a run's program stopped early.
enum Stop {
    Cancelled,
    Failed(String, String),
}

/// One run's program.
pub(super) struct Exec {
    pub(super) store: Arc<Store>,
    /// The tools the runtime grants.
    pub(super) tools: Arc<HashSet<String>>,
    pub(super) run_id: String,
    pub(super) cancel: Arc<Notify>,
    pub(super) texts: Vec<String>,
    pub(super) request: CreateRunRequest,
    pub(super) output: String,
    pub(super) turns: u32,
    pub(super) max_turns: u32,
}

impl Exec {
    fn with_run<T>(&self, f: impl FnOnce(&mut RunState) -> T) -> Option<T> {
        let mut state = self.store.lock();
        state.runs.get_mut(&self.run_id).map(f)
    }

    fn emit(&self, payload: EventPayload) -> Result<(), Stop> {
        match self.with_run(|rs| (rs.cancel_requested, push(rs, payload))) {
            Some((true, _)) => Err(Stop::Cancelled),
            _ => Ok(()),
        }
    }

    fn set_status(&self, status: RunStatus) -> Result<(), Stop> {
        self.with_run(|rs| {
            if rs.cancel_requested {
                return Err(Stop::Cancelled);
            }
            let previous = rs.run.status;
            push(
                rs,
                EventPayload::StatusChanged {
                    previous_status: previous,
                    status,
                },
            );
            rs.run.status = status;
            Ok(())
        })
        .unwrap_or(Err(Stop::Cancelled))
    }

    fn check_cancel(&self) -> Result<(), Stop> {
        match self.with_run(|rs| rs.cancel_requested) {
            Some(false) => Ok(()),
            _ => Err(Stop::Cancelled),
        }
    }

    fn say(&mut self, text: &str) -> Result<(), Stop> {
        self.output.push_str(text);
        self.emit(EventPayload::OutputDelta {
            text: text.to_owned(),
        })
    }

    fn turn(&mut self) -> Result<(), Stop> {
        self.turns += 1;
        if self.turns > self.max_turns {
            return Err(Stop::Failed(
                "turn_limit".into(),
                "the run used its whole turn budget".into(),
            ));
        }
        Ok(())
    }

    fn activity(
        &self,
        id: &str,
        class: ActionClass,
        category: &str,
        phase: ToolActivityPhase,
    ) -> Result<(), Stop> {
        self.emit(EventPayload::ToolActivity {
            activity_id: id.to_owned(),
            action_class: class,
            display_category: category.to_owned(),
            phase,
        })
    }

    fn tool(&self, tool: &str, pc: usize, fail: bool) -> Result<(), Stop> {
        let (class, category) = tools::face(tool).unwrap_or((ActionClass::Unspecified, "tools"));
        let id = format!("act_{pc}");
        if !self.tools.contains(tool) {
            return self.activity(&id, class, category, ToolActivityPhase::Failed);
        }
        self.activity(&id, class, category, ToolActivityPhase::Started)?;
        let end = if fail {
            ToolActivityPhase::Failed
        } else {
            ToolActivityPhase::Completed
        };
        self.activity(&id, class, category, end)
    }

    async fn sleep(&self, duration: Option<Duration>) -> Result<(), Stop> {
        self.check_cancel()?;
        let cancelled = self.cancel.notified();
        match duration {
            Some(d) => tokio::select! {
                _ = tokio::time::sleep(d) => {}
                _ = cancelled => {}
            },
            None => cancelled.await,
        }
        self.check_cancel()
    }

    /// Asks and waits for the answer (or a cancel).
    async fn ask(&self, kind: InteractionKind) -> Result<Answer, Stop> {
        let interaction = Interaction::new(new_id("int"), kind);
        let id = interaction.interaction_id.clone();
        let (tx, rx) = oneshot::channel();
        self.with_run(|rs| {
            rs.pending = Some(tx);
            rs.run.pending_interaction = Some(interaction.clone());
        });
        self.set_status(RunStatus::WaitingForInput)?;
        self.emit(EventPayload::InteractionRequested(interaction))?;
        let cancelled = self.cancel.notified();
        let answer = tokio::select! {
            answer = rx => answer.ok(),
            _ = cancelled => None,
        };
        let Some(answer) = answer else {
            self.with_run(|rs| {
                rs.pending = None;
                rs.run.pending_interaction = None;
                push(
                    rs,
                    EventPayload::InteractionResolved {
                        interaction_id: id,
                        outcome: InteractionOutcome::Cancelled,
                        choice: String::new(),
                    },
                );
            });
            return Err(Stop::Cancelled);
        };
        let (outcome, choice) = match &answer {
            Answer::Prompt { choice } => (InteractionOutcome::Answered, choice.clone()),
            Answer::Approval {
                decision: ApprovalDecision::Approve,
                ..
            } => (InteractionOutcome::Approved, String::new()),
            Answer::Approval { .. } => (InteractionOutcome::Denied, String::new()),
        };
        self.emit(EventPayload::InteractionResolved {
            interaction_id: id,
            outcome,
            choice,
        })?;
        self.set_status(RunStatus::Running)?;
        Ok(answer)
    }

    async fn step(&mut self, step: &Step, pc: usize) -> Result<(), Stop> {
        match step {
            Step::Say(text) | Step::Plan(text) => self.say(text),
            Step::Tool { tool, fail } => {
                self.turn()?;
                self.tool(tool, pc, *fail)
            }
            Step::Approve { tool, origin } => {
                self.turn()?;
                let (class, category) =
                    tools::face(tool).unwrap_or((ActionClass::Unspecified, "tools"));
                if !self.tools.contains(tool) {
                    return self.activity(
                        &format!("act_{pc}"),
                        class,
                        category,
                        ToolActivityPhase::Failed,
                    );
                }
                let mut approval = Approval::new(class, category, format!("bnd_{}", new_id("b")));
                if let Some(o) = origin {
                    approval.display_category = None;
                    approval.origin = Some(o.clone());
                }
                match self.ask(InteractionKind::Approval(approval)).await? {
                    Answer::Approval {
                        decision: ApprovalDecision::Approve,
                        ..
                    } => self.tool(tool, pc, false),
                    _ => self.activity(
                        &format!("act_{pc}"),
                        class,
                        category,
                        ToolActivityPhase::Failed,
                    ),
                }
            }
            Step::Ask { question, choices } => {
                self.turn()?;
                self.ask(InteractionKind::Prompt(Prompt::new(
                    question.clone(),
                    choices.clone(),
                )))
                .await
                .map(|_| ())
            }
            Step::Sleep(ms) => self.sleep(ms.map(Duration::from_millis)).await,
            Step::Effect => self.activity(
                &format!("act_{pc}"),
                ActionClass::Execute,
                "external effect",
                ToolActivityPhase::Started,
            ),
            Step::Crash => Err(Stop::Failed(
                "crash_disabled".into(),
                "this worker does not allow the crash step".into(),
            )),
            Step::Fail { code, message } => Err(Stop::Failed(code.clone(), message.clone())),
            Step::Research => self.research(pc),
        }
    }

    fn research(&mut self, pc: usize) -> Result<(), Stop> {
        let Some(options) = self.request.research().cloned() else {
            return Err(Stop::Failed(
                "research_unavailable".into(),
                "only a research run can collect evidence".into(),
            ));
        };
        for depth in 0..options.depth {
            for lane in &options.lanes {
                let class = if lane.as_str() == "WEB" {
                    ActionClass::Network
                } else {
                    ActionClass::Read
                };
                let id = format!("act_{pc}_{lane}_{depth}");
                self.activity(&id, class, "evidence", ToolActivityPhase::Started)?;
                self.activity(&id, class, "evidence", ToolActivityPhase::Completed)?;
            }
        }
        let topic = self
            .texts
            .first()
            .and_then(|t| t.lines().next())
            .unwrap_or("the question")
            .to_owned();
        let report = format!(
            "Report on {topic}: {} sources over {} rounds.",
            options.lanes.len(),
            options.depth
        );
        self.say(&report)
    }

    async fn program(&mut self, steps: Option<Vec<Step>>) -> Result<(), Stop> {
        self.set_status(RunStatus::Running)?;
        match steps {
            Some(steps) => {
                for (pc, step) in steps.iter().enumerate() {
                    self.check_cancel()?;
                    self.step(step, pc).await?;
                }
                Ok(())
            }
            None => match self.request.mode() {
                RunMode::Plan => {
                    let first = self
                        .texts
                        .join("\n")
                        .lines()
                        .next()
                        .unwrap_or("untitled")
                        .to_owned();
                    self.say(&format!("Draft plan: {first}"))
                }
                RunMode::Research => self.research(0),
                _ => {
                    let joined = self.texts.join("\n");
                    self.say(&joined)
                }
            },
        }
    }

    pub(super) async fn main(mut self, steps: Option<Vec<Step>>) {
        let outcome = self.program(steps).await;
        let mut result = RunResult::text(self.output.clone());
        if self.request.mode() == RunMode::Plan {
            result.plan = Some(PlanResult {
                plan_id: format!("plan_{}", self.run_id),
                revision: self.request.plan_action().map_or(1, |a| a.revision + 1),
                status: PlanStatus::Draft,
            });
        }
        let status = match outcome {
            Ok(()) => RunStatus::Succeeded,
            Err(Stop::Cancelled) => RunStatus::Cancelled,
            Err(Stop::Failed(code, message)) => {
                result.failure = Some(RunFailure::new(code, message));
                RunStatus::Failed
            }
        };
        self.with_run(|rs| {
            let status = if rs.cancel_requested {
                RunStatus::Cancelled
            } else {
                status
            };
            if status == RunStatus::Cancelled {
                result.failure = None;
            }
            rs.run.status = status;
            rs.run.result = Some(result.clone());
            rs.run.pending_interaction = None;
            rs.pending = None;
            push(
                rs,
                EventPayload::RunTerminated {
                    status,
                    result: Some(result),
                },
            );
        });
    }
}

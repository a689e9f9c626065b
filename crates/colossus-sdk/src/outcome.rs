//! Helpers over the watch (S11): [`Runs::wait`] for a run's outcome, and
//! [`Runs::text_stream`] for its output text only. Both follow the run through a
//! [`Watch`](crate::Watch), so every watch rule holds.

use futures_util::StreamExt;

use crate::Result;
use crate::backend::BoxStream;
use crate::model::Run;
use crate::runs::Runs;

impl Runs<'_> {
    /// The run once it has ended (its status and result). An ended run is read once;
    /// otherwise the run is watched from its current sequence, with every rule of
    /// [`Watch`](crate::Watch), and the run the watch's closing GetRun confirmed is returned. A run
    /// waiting for an answer keeps `wait` waiting: bound it with a timeout, or set
    /// [`watch_idle_timeout`](crate::options::ClientOptions::watch_idle_timeout).
    pub async fn wait(&self, run_id: &str) -> Result<Run> {
        let run = self.get(run_id).await?;
        if run.status.is_terminal() {
            return Ok(run);
        }
        let mut watch = self.watch_after(run_id, run.last_sequence);
        while let Some(event) = watch.next().await {
            event?;
        }
        match watch.final_run() {
            Some(run) => Ok(run),
            None => self.get(run_id).await,
        }
    }

    /// Only the run's output text, piece by piece, from the start. An error (a gap, say)
    /// ends it after the text delivered before it.
    pub fn text_stream(&self, run_id: &str) -> BoxStream<'static, Result<String>> {
        self.text_stream_after(run_id, 0)
    }

    /// Only the output text released after `after_sequence`.
    pub fn text_stream_after(
        &self,
        run_id: &str,
        after_sequence: u64,
    ) -> BoxStream<'static, Result<String>> {
        Box::pin(
            self.watch_after(run_id, after_sequence)
                .filter_map(|event| async move {
                    match event {
                        Ok(e) => e.output_text().map(|t| Ok(t.to_owned())),
                        Err(e) => Some(Err(e)),
                    }
                }),
        )
    }
}

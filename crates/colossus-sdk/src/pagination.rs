//! Pagination: [`Runs::pages`] and [`Runs::list`] follow continuation tokens through
//! short and empty pages, and refuse a page that makes no progress (S3).

use futures_util::{StreamExt, stream};

use crate::backend::BoxStream;
use crate::calls::Calls;
use crate::model::{ListRunsQuery, Run, RunPage};
use crate::runs::Runs;
use crate::{Error, Kind, Result, reasons};

impl Runs<'_> {
    /// Every page, following tokens through short and empty pages (from the query's
    /// token, if any). A worker that returns an empty page with the same token again
    /// fails with [`Kind::ProtocolViolation`] (`PAGE_NO_PROGRESS`) instead of looping
    /// forever. An error is the last item.
    pub fn pages(&self, query: ListRunsQuery) -> BoxStream<'static, Result<RunPage>> {
        struct State {
            calls: Calls,
            query: ListRunsQuery,
            done: bool,
        }
        let state = State {
            calls: self.calls().clone(),
            query,
            done: false,
        };
        Box::pin(stream::unfold(state, |mut s| async move {
            if s.done {
                return None;
            }
            let page = match Runs::new(&s.calls).list_page(&s.query).await {
                Ok(page) => page,
                Err(e) => {
                    s.done = true;
                    return Some((Err(e), s));
                }
            };
            let next = page.next_page_token.clone().filter(|t| !t.is_empty());
            if next.is_some() && next == s.query.page_token && page.runs.is_empty() {
                s.done = true;
                let e = Error::local(
                    Kind::ProtocolViolation,
                    reasons::PAGE_NO_PROGRESS,
                    "ListRuns returned an empty page with the same continuation token",
                );
                return Some((Err(e), s));
            }
            s.done = next.is_none();
            s.query.page_token = next;
            Some((Ok(page), s))
        }))
    }

    /// Every matching run across [`pages`](Self::pages).
    ///
    /// ```
    /// # #[cfg(feature = "embedded")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> colossus_sdk::Result<()> {
    /// use futures_util::TryStreamExt;
    /// use colossus_sdk::{Client, embedded::EmbeddedRuntime, model::*};
    ///
    /// let client = Client::embedded(EmbeddedRuntime::new());
    /// client.runs().create(CreateRunRequest::text("one")).await?;
    /// let runs: Vec<Run> = client.runs().list(ListRunsQuery::new()).try_collect().await?;
    /// assert_eq!(runs.len(), 1);
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "embedded"))]
    /// # fn main() {}
    /// ```
    pub fn list(&self, query: ListRunsQuery) -> BoxStream<'static, Result<Run>> {
        Box::pin(self.pages(query).flat_map(|page| {
            let items: Vec<Result<Run>> = match page {
                Ok(page) => page.runs.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            stream::iter(items)
        }))
    }
}

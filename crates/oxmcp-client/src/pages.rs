//! Following list cursors to the end, within limits: a server that keeps answering with a
//! cursor (the same one again, or fresh ones forever) gets an error, not an endless loop.

use std::collections::HashSet;
use std::future::Future;

use oxmcp_engine::CallError;
use oxmcp_types::{Prompt, Resource, ResourceTemplate};

use crate::client::Client;

/// Every page of the list method `method`: at most `max_pages` requests, and no cursor
/// followed twice.
///
/// # Errors
/// The first failing page's error; [`CallError::Protocol`] when the server repeats a cursor,
/// or when its list has not ended after `max_pages` pages.
pub(crate) async fn all_pages<T, F, Fut>(
    method: &str,
    max_pages: usize,
    mut page: F,
) -> Result<Vec<T>, CallError>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), CallError>>,
{
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    let mut cursor = None;
    for _ in 0..max_pages {
        let (mut more, next) = page(cursor).await?;
        items.append(&mut more);
        match next {
            None => return Ok(items),
            Some(c) if !seen.insert(c.clone()) => {
                return Err(CallError::Protocol(format!(
                    "{method}: the server repeated the cursor {c:?}; its pages go round in a circle"
                )));
            }
            Some(c) => cursor = Some(c),
        }
    }
    Err(CallError::Protocol(format!(
        "{method}: the list did not end within {max_pages} pages (ClientConfig::max_pages)"
    )))
}

impl Client {
    /// Every prompt, following cursors (at most [`ClientConfig::max_pages`] pages).
    ///
    /// [`ClientConfig::max_pages`]: crate::ClientConfig::max_pages
    ///
    /// # Errors
    /// See [`CallError`]; [`CallError::Protocol`] if the server repeats a cursor or the list
    /// does not end within the page limit.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, CallError> {
        all_pages("prompts/list", self.max_pages, |c| async move {
            let p = self.list_prompts(c).await?;
            Ok((p.prompts, p.next_cursor))
        })
        .await
    }

    /// Every resource, following cursors (at most [`ClientConfig::max_pages`] pages).
    ///
    /// [`ClientConfig::max_pages`]: crate::ClientConfig::max_pages
    ///
    /// # Errors
    /// As [`Client::list_all_prompts`].
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, CallError> {
        all_pages("resources/list", self.max_pages, |c| async move {
            let p = self.list_resources(c).await?;
            Ok((p.resources, p.next_cursor))
        })
        .await
    }

    /// Every resource template, following cursors (at most [`ClientConfig::max_pages`]
    /// pages).
    ///
    /// [`ClientConfig::max_pages`]: crate::ClientConfig::max_pages
    ///
    /// # Errors
    /// As [`Client::list_all_prompts`].
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, CallError> {
        all_pages("resources/templates/list", self.max_pages, |c| async move {
            let p = self.list_resource_templates(c).await?;
            Ok((p.resource_templates, p.next_cursor))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::future::Ready;

    use super::*;

    type Page = Result<(Vec<u32>, Option<String>), CallError>;

    /// Pages answered from a script, one per call, whatever the cursor.
    fn pages(script: &[(u32, Option<&str>)]) -> impl FnMut(Option<String>) -> Ready<Page> {
        let mut script: Vec<(u32, Option<String>)> = script
            .iter()
            .map(|(n, c)| (*n, c.map(str::to_owned)))
            .rev()
            .collect();
        move |_| {
            let (n, next) = script.pop().unwrap_or((0, None));
            std::future::ready(Ok((vec![n], next)))
        }
    }

    #[tokio::test]
    async fn pages_end_repeat_or_run_out() {
        let done = all_pages("m", 10, pages(&[(1, Some("a")), (2, Some("b")), (3, None)])).await;
        assert_eq!(done.unwrap(), [1, 2, 3]);
        // A cycle a -> b -> a is caught when `a` comes back.
        let cycle = all_pages(
            "m",
            10,
            pages(&[(1, Some("a")), (2, Some("b")), (3, Some("a"))]),
        );
        let e = cycle.await.unwrap_err().to_string();
        assert!(e.contains("repeated the cursor \"a\""), "{e}");
        let endless = all_pages("m", 2, pages(&[(1, Some("a")), (2, Some("b")), (3, None)]));
        let e = endless.await.unwrap_err().to_string();
        assert!(e.contains("within 2 pages"), "{e}");
    }
}

//! The typed methods: one per server method, checked against the server's capabilities.

use oxmcp_engine::{CallError, RequestOptions};
use oxmcp_types::{
    CallToolParams, CallToolResult, CompleteParams, CompleteResult, EmptyParams, GetPromptParams,
    GetPromptResult, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, ReadResourceResult, ResourceUriParams,
    SetLevelParams, Tool,
};
use oxmcp_types::{Feature, methods};
use serde_json::Value;

use super::{Active, Client};

/// Why a tool's `x-mcp-header` annotations are invalid, if they are (2026-07-28: each must be a
/// non-empty header token, unique case-insensitively, on a string, integer or boolean
/// property). [`Client::list_tools`] leaves such tools out; callers that read pages themselves
/// can do the same.
pub fn invalid_header_annotation(tool: &Tool) -> Option<String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    let mut seen = std::collections::HashSet::new();
    let props = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)?;
    for (prop, schema) in props {
        let Some(h) = schema.get("x-mcp-header") else {
            continue;
        };
        let Some(h) = h.as_str() else {
            return Some(format!("{prop}: not a string"));
        };
        if h.is_empty() || !h.chars().all(token) {
            return Some(format!("{prop}: {h:?} is not a header name token"));
        }
        if !seen.insert(h.to_ascii_lowercase()) {
            return Some(format!("{prop}: {h:?} is used twice"));
        }
        let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
        // Integer, string and boolean only: `number` is excluded by the spec.
        if !matches!(ty, "string" | "integer" | "boolean") {
            return Some(format!(
                "{prop}: x-mcp-header on a {ty:?} property (integer, string or boolean only)"
            ));
        }
    }
    None
}

impl Client {
    pub(super) fn supports_subscribe(&self) -> bool {
        if self.is_modern() {
            return false; // replaced by subscriptions/listen in 2026-07-28
        }
        let resources = self.init.capabilities.resources.as_ref();
        resources.and_then(|r| r.subscribe) == Some(true)
    }

    /// `ping`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn ping(&self) -> Result<(), CallError> {
        if self.is_modern() {
            // 2026-07-28 has no ping: server/discover is the cheapest liveness check.
            return self
                .call::<methods::Discover>(&EmptyParams::default())
                .await
                .map(|_| ());
        }
        self.call::<methods::Ping>(&EmptyParams::default())
            .await
            .map(|_| ())
    }

    /// One page of `tools/list`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn list_tools_page(
        &self,
        cursor: Option<String>,
    ) -> Result<ListToolsResult, CallError> {
        let supported = self.init.capabilities.tools.is_some();
        let page = self
            .page::<methods::ListTools>(supported, "tools", cursor)
            .await?;
        // What results are checked against, and which tools take tasks.
        self.output_schemas.learn(&page.tools);
        Ok(page)
    }

    /// Every tool, following cursors (at most
    /// [`ClientConfig::max_pages`](super::ClientConfig::max_pages) pages). Tools whose
    /// `x-mcp-header` annotations are invalid (2026-07-28: not a non-empty header token,
    /// duplicated case-insensitively, or on a non-primitive property) are left out, with a
    /// warning: they cannot be called correctly.
    ///
    /// # Errors
    /// See [`CallError`]; [`CallError::Protocol`] if the server repeats a cursor or the list
    /// does not end within the page limit.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, CallError> {
        let all = crate::pages::all_pages("tools/list", self.max_pages, |c| async move {
            let page = self.list_tools_page(c).await?;
            Ok((page.tools, page.next_cursor))
        })
        .await?;
        {
            let mut safe = self.safe_tools.lock();
            for t in &all {
                if crate::retry::safe_tool(t) {
                    safe.insert(t.name.clone());
                } else {
                    safe.remove(&t.name);
                }
            }
        }
        for t in &all {
            // SEP-986 names are a SHOULD: such a tool stays callable, with a warning.
            if let Some(why) = oxmcp_types::tools::tool_name_problem(&t.name) {
                tracing::warn!(tool = ?t.name, "the server lists a tool whose name is outside SEP-986: {why}");
            }
        }
        Ok(all
            .into_iter()
            .filter(|t| match invalid_header_annotation(t) {
                Some(why) => {
                    tracing::warn!(tool = ?t.name, "ignoring a tool with an invalid x-mcp-header: {why}");
                    false
                }
                None => true,
            })
            .collect())
    }

    /// Forgets every cached list page (the next list call asks the server).
    pub fn invalidate_lists(&self) {
        self.list_cache.lock().pages.clear();
    }

    /// `tools/call`.
    ///
    /// # Errors
    /// See [`CallError`]. A tool that fails is `Ok` with `is_error`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, CallError> {
        self.call_tool_with(name, arguments, &self.options).await
    }

    /// `tools/call` with per-request options (timeouts, progress callback).
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: JsonObject,
        options: &RequestOptions,
    ) -> Result<CallToolResult, CallError> {
        self.call_tool_retry(name, arguments, options, crate::retry::RetryChoice::IfSafe)
            .await
    }

    /// `tools/call`, saying whether a failed call may be retried (by default only tools whose
    /// annotations, seen in `list_tools`, say read-only or idempotent are).
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn call_tool_retry(
        &self,
        name: &str,
        arguments: JsonObject,
        options: &RequestOptions,
        choice: crate::retry::RetryChoice,
    ) -> Result<CallToolResult, CallError> {
        self.require(self.init.capabilities.tools.is_some(), "tools")?;
        let retry = match choice {
            crate::retry::RetryChoice::Always => true,
            crate::retry::RetryChoice::Never => false,
            crate::retry::RetryChoice::IfSafe => self.safe_tools.lock().contains(name),
        };
        let result = self
            .call_tool_unchecked(name, arguments, options, retry)
            .await?;
        self.check_output(name, &result)?;
        Ok(result)
    }

    /// Checks a result of tool `name` against its `outputSchema` as last listed (when
    /// [`ClientConfig::validate_output`](super::ClientConfig::validate_output) is on;
    /// `call_tool` does it by itself), e.g. the
    /// result of a task followed with [`Client::wait_task`].
    ///
    /// # Errors
    /// [`CallError::Protocol`] if the result lacks `structuredContent` or does not match.
    pub fn check_output(&self, name: &str, result: &CallToolResult) -> Result<(), CallError> {
        if self.validate_output {
            self.output_schemas.check(name, result)?;
        }
        Ok(())
    }

    async fn call_tool_unchecked(
        &self,
        name: &str,
        arguments: JsonObject,
        options: &RequestOptions,
        retry: bool,
    ) -> Result<CallToolResult, CallError> {
        let params = CallToolParams::new(name, arguments);
        if self.is_modern() {
            // A 2026-07-28 server may answer with a task (when we declared tasks): it is
            // followed to its end, outside the retries (a failed poll must not start the call
            // again).
            let value = serde_json::to_value(&params)?;
            let result = self
                .retrying(retry, options, |o| {
                    let value = value.clone();
                    async move { self.value_request("tools/call", value, &o).await }
                })
                .await?;
            return self.tool_result(result, options).await;
        }
        self.retrying(retry, options, |o| {
            self.request_once::<methods::CallTool>(&params, o)
        })
        .await
    }

    /// One page of `resources/list`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, CallError> {
        let supported = self.init.capabilities.resources.is_some();
        self.page::<methods::ListResources>(supported, "resources", cursor)
            .await
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, CallError> {
        let supported = self.init.capabilities.resources.is_some();
        self.page::<methods::ListResourceTemplates>(supported, "resources", cursor)
            .await
    }

    /// `resources/read`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, CallError> {
        self.require(self.init.capabilities.resources.is_some(), "resources")?;
        self.call::<methods::ReadResource>(&ResourceUriParams::new(uri))
            .await
    }

    /// `resources/subscribe`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn subscribe(&self, uri: &str) -> Result<(), CallError> {
        self.require(self.supports_subscribe(), "resource subscriptions")?;
        self.call::<methods::Subscribe>(&ResourceUriParams::new(uri))
            .await
            .map(|_| ())
    }

    /// `resources/unsubscribe`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), CallError> {
        self.require(self.supports_subscribe(), "resource subscriptions")?;
        self.call::<methods::Unsubscribe>(&ResourceUriParams::new(uri))
            .await
            .map(|_| ())
    }

    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, CallError> {
        let supported = self.init.capabilities.prompts.is_some();
        self.page::<methods::ListPrompts>(supported, "prompts", cursor)
            .await
    }

    /// `prompts/get`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: std::collections::BTreeMap<String, String>,
    ) -> Result<GetPromptResult, CallError> {
        self.require(self.init.capabilities.prompts.is_some(), "prompts")?;
        let params = GetPromptParams::default()
            .with_name(name.to_owned())
            .with_arguments(Some(arguments));
        self.call::<methods::GetPrompt>(&params).await
    }

    /// `completion/complete`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn complete(&self, params: &CompleteParams) -> Result<CompleteResult, CallError> {
        // 2024-11-05 had `completion/complete` but no capability for it (it came in
        // 2025-03-26): such a server is asked, and says itself if it has none.
        let declared = self.init.capabilities.completions.is_some();
        let undeclarable = !self.protocol_version().has(Feature::Completions);
        self.require(declared || undeclarable, "completions")?;
        self.call::<methods::Complete>(params).await
    }

    /// `logging/setLevel`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<(), CallError> {
        self.require(self.init.capabilities.logging.is_some(), "logging")?;
        if let Active::Modern { log_level, .. } = &self.active {
            // 2026-07-28: the level travels in each request's _meta.
            *log_level.lock() = Some(level);
            return Ok(());
        }
        self.call::<methods::SetLevel>(&SetLevelParams { level, meta: None })
            .await
            .map(|_| ())
    }

    /// Tells the server our roots changed.
    ///
    /// # Errors
    /// [`CallError::Closed`] if the connection is gone.
    pub async fn notify_roots_changed(&self) -> Result<(), CallError> {
        self.peer
            .notify::<methods::RootsListChanged>(&EmptyParams::default())
            .await
    }
}

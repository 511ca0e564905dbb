//! The method table: one marker type per request and notification, tying a method name to
//! its params and result types.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::common::{EmptyParams, EmptyResult, PaginatedParams};
use crate::completion::{CompleteParams, CompleteResult};
use crate::elicitation::{ElicitParams, ElicitResult, ElicitationCompleteParams};
use crate::lifecycle::{InitializeParams, InitializeResult};
use crate::logging::{LoggingMessageParams, SetLevelParams};
use crate::modern::{DiscoverResult, ListenParams};
use crate::notifications::{CancelledParams, ProgressParams};
use crate::prompts::{GetPromptParams, GetPromptResult, ListPromptsResult};
use crate::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, ResourceUriParams,
};
use crate::roots::ListRootsResult;
use crate::sampling::{CreateMessageParams, CreateMessageResult};
use crate::tools::{CallToolParams, CallToolResult, ListToolsResult};

/// A request method.
pub trait Request {
    /// Method name on the wire.
    const METHOD: &'static str;
    /// Params type.
    type Params: Serialize + DeserializeOwned + Send + 'static;
    /// Result type.
    type Result: Serialize + DeserializeOwned + Send + 'static;
}

/// A notification method.
pub trait Notification {
    /// Method name on the wire.
    const METHOD: &'static str;
    /// Params type.
    type Params: Serialize + DeserializeOwned + Send + 'static;
}

macro_rules! request {
    ($(#[$doc:meta])* $name:ident, $method:literal, $params:ty, $result:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub enum $name {}
        impl Request for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
            type Result = $result;
        }
    };
}

macro_rules! notification {
    ($(#[$doc:meta])* $name:ident, $method:literal, $params:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub enum $name {}
        impl Notification for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
        }
    };
}

request!(/// `initialize` (legacy handshake).
    Initialize, "initialize", InitializeParams, InitializeResult);
request!(/// `ping`.
    Ping, "ping", EmptyParams, EmptyResult);
request!(/// `server/discover` (2026-07-28).
    Discover, "server/discover", EmptyParams, DiscoverResult);
request!(/// `tools/list`.
    ListTools, "tools/list", PaginatedParams, ListToolsResult);
request!(/// `tools/call`.
    CallTool, "tools/call", CallToolParams, CallToolResult);
request!(/// `resources/list`.
    ListResources, "resources/list", PaginatedParams, ListResourcesResult);
request!(/// `resources/templates/list`.
    ListResourceTemplates, "resources/templates/list", PaginatedParams, ListResourceTemplatesResult);
request!(/// `resources/read`.
    ReadResource, "resources/read", ResourceUriParams, ReadResourceResult);
request!(/// `resources/subscribe`.
    Subscribe, "resources/subscribe", ResourceUriParams, EmptyResult);
request!(/// `resources/unsubscribe`.
    Unsubscribe, "resources/unsubscribe", ResourceUriParams, EmptyResult);
request!(/// `prompts/list`.
    ListPrompts, "prompts/list", PaginatedParams, ListPromptsResult);
request!(/// `prompts/get`.
    GetPrompt, "prompts/get", GetPromptParams, GetPromptResult);
request!(/// `completion/complete`.
    Complete, "completion/complete", CompleteParams, CompleteResult);
request!(/// `logging/setLevel`.
    SetLevel, "logging/setLevel", SetLevelParams, EmptyResult);
request!(/// `subscriptions/listen` (2026-07-28).
    Listen, "subscriptions/listen", ListenParams, EmptyResult);
request!(/// `sampling/createMessage` (server to client).
    CreateMessage, "sampling/createMessage", CreateMessageParams, CreateMessageResult);
request!(/// `elicitation/create` (server to client).
    Elicit, "elicitation/create", ElicitParams, ElicitResult);
request!(/// `roots/list` (server to client).
    ListRoots, "roots/list", EmptyParams, ListRootsResult);

notification!(/// `notifications/initialized`.
    Initialized, "notifications/initialized", EmptyParams);
notification!(/// `notifications/cancelled`.
    Cancelled, "notifications/cancelled", CancelledParams);
notification!(/// `notifications/progress`.
    Progress, "notifications/progress", ProgressParams);
notification!(/// `notifications/message`.
    LoggingMessage, "notifications/message", LoggingMessageParams);
notification!(/// `notifications/resources/updated`.
    ResourceUpdated, "notifications/resources/updated", ResourceUriParams);
notification!(/// `notifications/resources/list_changed`.
    ResourceListChanged, "notifications/resources/list_changed", EmptyParams);
notification!(/// `notifications/tools/list_changed`.
    ToolListChanged, "notifications/tools/list_changed", EmptyParams);
notification!(/// `notifications/prompts/list_changed`.
    PromptListChanged, "notifications/prompts/list_changed", EmptyParams);
notification!(/// `notifications/elicitation/complete` (2025-11-25, server to client).
    ElicitationComplete, "notifications/elicitation/complete", ElicitationCompleteParams);
notification!(/// `notifications/roots/list_changed`.
    RootsListChanged, "notifications/roots/list_changed", EmptyParams);
notification!(/// `notifications/subscriptions/acknowledged` (2026-07-28).
    SubscriptionsAcknowledged, "notifications/subscriptions/acknowledged", ListenParams);

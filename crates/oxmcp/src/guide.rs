//! The guide (`docs/guide/` in the repository), one page per module, so that it is read
//! beside the API on docs.rs. Links between pages point at the repository's files.

#![allow(rustdoc::broken_intra_doc_links, rustdoc::bare_urls)]

#[doc = include_str!("../guide/README.md")]
pub mod contents {}
#[doc = include_str!("../guide/getting-started-server.md")]
pub mod getting_started_server {}
#[doc = include_str!("../guide/macros.md")]
pub mod macros {}
#[doc = include_str!("../guide/dynamic-servers.md")]
pub mod dynamic_servers {}
#[doc = include_str!("../guide/getting-started-client.md")]
pub mod getting_started_client {}
#[doc = include_str!("../guide/eras.md")]
pub mod eras {}
#[doc = include_str!("../guide/transports.md")]
pub mod transports {}
#[doc = include_str!("../guide/deploying.md")]
pub mod deploying {}
#[doc = include_str!("../guide/cli.md")]
pub mod cli {}
#[doc = include_str!("../guide/migrating-from-rmcp.md")]
pub mod migrating_from_rmcp {}

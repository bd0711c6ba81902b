//! The API resources the plugin talks to. The table is [`promotion_shared::api_resources`],
//! shared with promotion-controller, so that both binaries name every resource the same way.

pub use promotion_shared::api_resources::*;

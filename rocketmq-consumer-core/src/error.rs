//! [`ConfigError`]: what every configuration check and subscription refuses with, on its own so
//! the modules whose settings the configuration holds (namespaces, rate limits) can name it
//! without importing the configuration.

/// A configuration or subscription the consumer cannot work with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid consumer configuration: {0}")]
pub struct ConfigError(pub String);

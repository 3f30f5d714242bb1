//! [`ProducerMessage`]: a message to send, as the application builds it.

use proto::message::OutgoingMessage;

use super::SHARDING_KEY;

/// A message to send: an [`OutgoingMessage`] (body, flag, properties; its topic is replaced by
/// the topic it is sent to) and the builder methods an application needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProducerMessage {
    pub(super) message: OutgoingMessage,
}

impl ProducerMessage {
    /// A message with body `body` and no properties.
    pub fn new(body: impl Into<Vec<u8>>) -> Self {
        Self {
            message: OutgoingMessage::new(String::new(), body.into()),
        }
    }

    /// Sets the tag, the unit of broker-side filtering (`TAGS`).
    #[must_use]
    pub fn with_tag(mut self, tag: impl Into<String>) -> Self {
        self.message.set_tags(tag);
        self
    }

    /// Sets the business keys, space-separated (`KEYS`).
    #[must_use]
    pub fn with_keys(mut self, keys: impl Into<String>) -> Self {
        self.message.set_keys(keys);
        self
    }

    /// Sends the message to the queue its sharding key hashes to, instead of round robin:
    /// messages with the same key go to the same queue, in the order they are sent.
    #[must_use]
    pub fn with_sharding_key(mut self, key: impl Into<String>) -> Self {
        self.message.set_property(SHARDING_KEY, key);
        self
    }

    /// Sets any other property (see [`proto::message::encode_properties`] for the characters
    /// names and values may not contain).
    #[must_use]
    pub fn with_property(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.message.set_property(name, value);
        self
    }

    /// Sets the user flag, stored as is.
    #[must_use]
    pub fn with_flag(mut self, flag: i32) -> Self {
        self.message.flag = flag;
        self
    }

    /// The sharding key, when one was set.
    pub fn sharding_key(&self) -> Option<&str> {
        self.message.property(SHARDING_KEY)
    }

    /// The message as the codec sees it.
    pub fn as_outgoing(&self) -> &OutgoingMessage {
        &self.message
    }
}

impl From<OutgoingMessage> for ProducerMessage {
    /// Keeps the body (without copying it), the flag and the properties.
    fn from(message: OutgoingMessage) -> Self {
        Self { message }
    }
}

impl From<Vec<u8>> for ProducerMessage {
    fn from(body: Vec<u8>) -> Self {
        Self::new(body)
    }
}

impl From<&[u8]> for ProducerMessage {
    fn from(body: &[u8]) -> Self {
        Self::new(body)
    }
}

impl From<String> for ProducerMessage {
    fn from(body: String) -> Self {
        Self::new(body)
    }
}

impl From<&str> for ProducerMessage {
    fn from(body: &str) -> Self {
        Self::new(body)
    }
}

//! The messages of one delivery, as the handler gets them ([`Messages`]).

use std::ops::{Deref, DerefMut};

use proto::message::Message;

/// The messages of one delivery, in queue order: a slice of [`Message`]s (it derefs to
/// `[Message]`) that the handler owns.
///
/// A delivery holds one message unless `consume_batch_size` asks for more, and one message is
/// kept inline: handing it to the handler allocates nothing. A `Vec<Message>` was an
/// allocation per delivery, at 100 B messages half of the push consumer's allocations.
///
/// ```
/// # use rocketmq_consumer_core::Messages;
/// fn keys(messages: Messages) -> Vec<String> {
///     messages.iter().filter_map(|m| m.keys().map(str::to_owned)).collect()
/// }
/// assert!(keys(Messages::default()).is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Messages(Held);

#[derive(Clone, Debug)]
enum Held {
    One(Message),
    Many(Vec<Message>),
}

impl Default for Held {
    fn default() -> Self {
        Self::Many(Vec::new())
    }
}

impl Messages {
    /// Room for `capacity` messages: none is allocated for one, which is kept inline.
    pub fn with_capacity(capacity: usize) -> Self {
        if capacity <= 1 {
            Self::default()
        } else {
            Self(Held::Many(Vec::with_capacity(capacity)))
        }
    }

    /// The messages as a `Vec` (allocating only when there is exactly one).
    pub fn into_vec(self) -> Vec<Message> {
        match self.0 {
            Held::One(message) => vec![message],
            Held::Many(messages) => messages,
        }
    }

    /// Adds a message at the end.
    pub fn push(&mut self, message: Message) {
        match &mut self.0 {
            // Room made by `with_capacity` is kept; otherwise one message stays inline.
            Held::Many(messages) if messages.capacity() == 0 => self.0 = Held::One(message),
            Held::Many(messages) => messages.push(message),
            Held::One(_) => {
                let Held::One(first) = std::mem::take(&mut self.0) else {
                    unreachable!("matched as one message just above");
                };
                self.0 = Held::Many(vec![first, message]);
            }
        }
    }
}

impl Deref for Messages {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        match &self.0 {
            Held::One(message) => std::slice::from_ref(message),
            Held::Many(messages) => messages,
        }
    }
}

impl DerefMut for Messages {
    fn deref_mut(&mut self) -> &mut [Message] {
        match &mut self.0 {
            Held::One(message) => std::slice::from_mut(message),
            Held::Many(messages) => messages,
        }
    }
}

impl From<Message> for Messages {
    fn from(message: Message) -> Self {
        Self(Held::One(message))
    }
}

impl From<Vec<Message>> for Messages {
    fn from(messages: Vec<Message>) -> Self {
        Self(Held::Many(messages))
    }
}

impl From<Messages> for Vec<Message> {
    fn from(messages: Messages) -> Self {
        messages.into_vec()
    }
}

impl FromIterator<Message> for Messages {
    fn from_iter<I: IntoIterator<Item = Message>>(messages: I) -> Self {
        let mut messages = messages.into_iter();
        match (messages.next(), messages.next()) {
            (None, _) => Self::default(),
            (Some(only), None) => Self(Held::One(only)),
            (Some(first), Some(second)) => {
                let mut all = Vec::with_capacity(2 + messages.size_hint().0);
                all.extend([first, second]);
                all.extend(messages);
                Self(Held::Many(all))
            }
        }
    }
}

impl Extend<Message> for Messages {
    fn extend<I: IntoIterator<Item = Message>>(&mut self, messages: I) {
        for message in messages {
            self.push(message);
        }
    }
}

impl IntoIterator for Messages {
    type Item = Message;
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        IntoIter(match self.0 {
            Held::One(message) => Iter::One(Some(message).into_iter()),
            Held::Many(messages) => Iter::Many(messages.into_iter()),
        })
    }
}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a Message;
    type IntoIter = std::slice::Iter<'a, Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Messages {
    type Item = &'a mut Message;
    type IntoIter = std::slice::IterMut<'a, Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

/// The messages of a [`Messages`], by value, in queue order.
#[derive(Debug)]
pub struct IntoIter(Iter);

#[derive(Debug)]
enum Iter {
    One(std::option::IntoIter<Message>),
    Many(std::vec::IntoIter<Message>),
}

impl Iterator for IntoIter {
    type Item = Message;

    fn next(&mut self) -> Option<Message> {
        match &mut self.0 {
            Iter::One(one) => one.next(),
            Iter::Many(many) => many.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Iter::One(one) => one.size_hint(),
            Iter::Many(many) => many.size_hint(),
        }
    }
}

impl DoubleEndedIterator for IntoIter {
    fn next_back(&mut self) -> Option<Message> {
        match &mut self.0 {
            Iter::One(one) => one.next_back(),
            Iter::Many(many) => many.next_back(),
        }
    }
}

impl ExactSizeIterator for IntoIter {}

impl std::iter::FusedIterator for IntoIter {}

//! [`Lookups`]: which send is asking the name servers for a topic's route, and the sends
//! waiting for that answer, so a burst of sends to a topic without a route asks once.

use std::collections::BTreeMap;

use super::SendId;

/// The topics being looked up, each with the send that asks and the sends that wait for it.
#[derive(Debug, Default)]
pub(super) struct Lookups {
    by_topic: BTreeMap<String, Lookup>,
}

#[derive(Debug)]
struct Lookup {
    asking: SendId,
    waiting: Vec<SendId>,
}

impl Lookups {
    /// `send` wants `topic`'s route: true when it may ask (nobody else is), false when it was
    /// added to the sends waiting for the one that asks.
    pub(super) fn ask(&mut self, topic: &str, send: SendId) -> bool {
        match self.by_topic.get_mut(topic) {
            Some(lookup) if lookup.asking == send => true,
            Some(lookup) => {
                if !lookup.waiting.contains(&send) {
                    lookup.waiting.push(send);
                }
                false
            }
            None => {
                self.by_topic.insert(
                    topic.to_owned(),
                    Lookup {
                        asking: send,
                        waiting: Vec::new(),
                    },
                );
                true
            }
        }
    }

    /// `send`'s lookup of `topic` was answered (or failed): it asks no longer, and the sends
    /// that waited for it are returned, in the order they came, to go on (with the route it
    /// brought, or to ask themselves).
    pub(super) fn answered(&mut self, topic: &str, send: SendId) -> Vec<SendId> {
        match self.by_topic.get(topic) {
            Some(lookup) if lookup.asking == send => self
                .by_topic
                .remove(topic)
                .map(|l| l.waiting)
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// `send` is over (done, failed, or the producer closed): it no longer waits, and if it was
    /// asking, the sends that waited are returned to go on.
    pub(super) fn forget(&mut self, send: SendId) -> Vec<SendId> {
        let mut released = Vec::new();
        self.by_topic.retain(|_, lookup| {
            lookup.waiting.retain(|s| *s != send);
            if lookup.asking == send {
                released.append(&mut lookup.waiting);
                false
            } else {
                true
            }
        });
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_send_asks_and_the_others_wait_for_it() {
        let mut lookups = Lookups::default();
        assert!(lookups.ask("T", SendId(1)));
        assert!(!lookups.ask("T", SendId(2)));
        assert!(!lookups.ask("T", SendId(3)));
        assert!(!lookups.ask("T", SendId(2)), "waits once");
        assert!(lookups.ask("U", SendId(4)), "another topic asks on its own");
        assert!(
            lookups.ask("T", SendId(1)),
            "the asker asks again (the next name server)"
        );
        assert_eq!(
            lookups.answered("T", SendId(2)),
            [],
            "only the asker's answer counts"
        );
        assert_eq!(lookups.answered("T", SendId(1)), [SendId(2), SendId(3)]);
        assert!(lookups.ask("T", SendId(2)), "nobody asks any more");
    }

    #[test]
    fn a_send_that_ends_while_asking_releases_its_waiters() {
        let mut lookups = Lookups::default();
        assert!(lookups.ask("T", SendId(1)));
        assert!(!lookups.ask("T", SendId(2)));
        assert!(!lookups.ask("T", SendId(3)));
        assert_eq!(lookups.forget(SendId(3)), []);
        assert_eq!(lookups.forget(SendId(1)), [SendId(2)]);
        assert!(lookups.ask("T", SendId(2)));
    }
}

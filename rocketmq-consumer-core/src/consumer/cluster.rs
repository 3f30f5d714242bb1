//! The consumer's view of the cluster: the name servers and which one is asked, each
//! subscribed topic's route, and the broker address book those routes make.
//!
//! The address book follows the routes as Java's `MQClientInstance` keeps its
//! `brokerAddrTable`: each route replaces the addresses of the brokers it names, so a master
//! that left the route leaves the book and its slave serves reads (and takes what must reach
//! the master, as Java's `findBrokerAddressInSubscribe` falls back). A broker no route names
//! any more keeps its last addresses: a queue of it being revoked still commits there.

use std::collections::{BTreeMap, BTreeSet};

use proto::body::TopicRouteData;

/// Broker id 0 is the master (`MixAll.MASTER_ID`).
const MASTER_ID: i64 = 0;

/// What a new route changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RouteChange {
    /// An address appeared that was not in the book (or the topic's route is new): brokers
    /// there may not know this consumer yet.
    pub(crate) new_broker: bool,
    /// The topic's set of queues changed (or the topic's route is new).
    pub(crate) queues_changed: bool,
}

/// Name servers, routes and the broker address book (see the module docs).
#[derive(Debug)]
pub(crate) struct ClusterView {
    name_servers: Vec<String>,
    /// The name server asked now; moves on when it fails.
    name_server: usize,
    routes: BTreeMap<String, TopicRouteData>,
    /// Broker name → broker id → address.
    brokers: BTreeMap<String, BTreeMap<i64, String>>,
}

impl ClusterView {
    /// A view with no routes yet, asking name server `first` (an index, taken modulo their
    /// number) first.
    pub(crate) fn new(name_servers: Vec<String>, first: usize) -> Self {
        let name_server = first % name_servers.len().max(1);
        Self {
            name_servers,
            name_server,
            routes: BTreeMap::new(),
            brokers: BTreeMap::new(),
        }
    }

    /// The name server to ask now.
    pub(crate) fn name_server(&self) -> Option<&str> {
        self.name_servers.get(self.name_server).map(String::as_str)
    }

    /// A request to `addr` failed: when it is the name server asked now, the next one is
    /// asked from now on. Once per failing name server, not once per failed request: a
    /// refresh sends one request per topic, and they all fail together.
    pub(crate) fn name_server_failed(&mut self, addr: &str) {
        if self.name_server() == Some(addr) {
            self.name_server = (self.name_server + 1) % self.name_servers.len().max(1);
        }
    }

    /// The route of `topic`, when known.
    pub(crate) fn route(&self, topic: &str) -> Option<&TopicRouteData> {
        self.routes.get(topic)
    }

    /// Forgets `topic`'s route (the topic is gone, or no longer subscribed); returns whether
    /// there was one.
    pub(crate) fn forget_route(&mut self, topic: &str) -> bool {
        self.routes.remove(topic).is_some()
    }

    /// Records `topic`'s route and brings the address book up to date with it.
    pub(crate) fn update_route(&mut self, topic: &str, route: TopicRouteData) -> RouteChange {
        let mut new_broker = !self.routes.contains_key(topic);
        for broker in &route.broker_datas {
            let known = self.brokers.get(&broker.broker_name);
            if broker
                .broker_addrs
                .values()
                .any(|addr| known.is_none_or(|ids| !ids.values().any(|a| a == addr)))
            {
                new_broker = true;
            }
            self.brokers
                .insert(broker.broker_name.clone(), broker.broker_addrs.clone());
        }
        let queues_changed = self
            .routes
            .get(topic)
            .is_none_or(|old| old.subscribe_queues(topic) != route.subscribe_queues(topic));
        self.routes.insert(topic.to_owned(), route);
        RouteChange {
            new_broker,
            queues_changed,
        }
    }

    /// Where to send what must reach a broker's master (offsets, locks, send-backs): the
    /// master, else any node of it (`findBrokerAddressInSubscribe(name, MASTER_ID, false)`).
    pub(crate) fn master_addr(&self, broker: &str) -> Option<String> {
        let ids = self.brokers.get(broker)?;
        ids.get(&MASTER_ID).or_else(|| ids.values().next()).cloned()
    }

    /// Where queue locks go: the master, and no other node
    /// (`RebalanceImpl.lock`/`lockAll`/`unlock` ask `findBrokerAddressInSubscribe(name,
    /// MASTER_ID, true)`). A slave keeps a lock table of its own (4.9's
    /// `AdminBrokerProcessor.lockBatchMQ` checks no role), which the master never hears of: a
    /// lock granted there while the master is down would not stop the master, once back,
    /// granting the queue to another member. So an orderly queue of a broker whose master is
    /// gone waits for it.
    pub(crate) fn lock_addr(&self, broker: &str) -> Option<String> {
        self.brokers.get(broker)?.get(&MASTER_ID).cloned()
    }

    /// The address to pull from: the suggested node, else the master, else any
    /// (`findBrokerAddressInSubscribe`).
    pub(crate) fn pull_addr(&self, broker: &str, id: i64) -> Option<String> {
        let ids = self.brokers.get(broker)?;
        ids.get(&id)
            .or_else(|| ids.get(&MASTER_ID))
            .or_else(|| ids.values().next())
            .cloned()
    }

    /// Whether `addr` is a broker node of some route.
    pub(crate) fn is_broker(&self, addr: &str) -> bool {
        self.brokers
            .values()
            .any(|ids| ids.values().any(|a| a == addr))
    }

    /// Every broker node's address.
    pub(crate) fn broker_addrs(&self) -> BTreeSet<String> {
        self.brokers
            .values()
            .flat_map(|ids| ids.values().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use proto::body::{BrokerData, QueueData};

    use super::*;

    fn route(brokers: &[(&str, &[(i64, &str)])]) -> TopicRouteData {
        TopicRouteData {
            queue_datas: brokers
                .iter()
                .map(|(name, _)| QueueData {
                    broker_name: (*name).to_owned(),
                    read_queue_nums: 2,
                    write_queue_nums: 2,
                    perm: 6,
                    ..QueueData::default()
                })
                .collect(),
            broker_datas: brokers
                .iter()
                .map(|(name, addrs)| BrokerData {
                    cluster: "c".into(),
                    broker_name: (*name).to_owned(),
                    broker_addrs: addrs.iter().map(|(id, a)| (*id, (*a).to_owned())).collect(),
                    ..BrokerData::default()
                })
                .collect(),
            ..TopicRouteData::default()
        }
    }

    #[test]
    fn a_master_gone_from_the_route_leaves_the_book_and_its_slave_serves() {
        let mut view = ClusterView::new(vec!["ns".into()], 0);
        let both = route(&[("b", &[(0, "m:1"), (1, "s:1")])]);
        assert!(view.update_route("T", both).new_broker);
        assert_eq!(view.master_addr("b").as_deref(), Some("m:1"));
        let slave_only = route(&[("b", &[(1, "s:1")])]);
        let change = view.update_route("T", slave_only);
        assert!(!change.new_broker && !change.queues_changed);
        assert_eq!(view.master_addr("b").as_deref(), Some("s:1"));
        assert_eq!(
            view.lock_addr("b"),
            None,
            "locks only ever go to the master"
        );
        assert_eq!(view.pull_addr("b", 0), Some("s:1".to_owned()));
        assert!(!view.is_broker("m:1"));
        // The master comes back: a new address, so it is told about us again.
        let back = route(&[("b", &[(0, "m:1"), (1, "s:1")])]);
        assert!(view.update_route("T", back).new_broker);
        assert_eq!(view.pull_addr("b", 1), Some("s:1".to_owned()));
        assert_eq!(view.pull_addr("b", 0), Some("m:1".to_owned()));
    }

    #[test]
    fn name_servers_rotate_once_per_failing_server() {
        let mut view = ClusterView::new(vec!["a".into(), "b".into()], 3);
        assert_eq!(view.name_server(), Some("b"));
        view.name_server_failed("b");
        view.name_server_failed("b");
        assert_eq!(view.name_server(), Some("a"));
    }
}

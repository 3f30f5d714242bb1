//! The assignment: routes, the brokers told to serve this group by pop
//! (`SET_MESSAGE_REQUEST_MODE`), heartbeats, and the queues each broker assigns this member
//! (`QUERY_ASSIGNMENT`), which start and stop its pollers.

use std::collections::BTreeSet;
use std::time::Instant;

use proto::body::{
    ConsumerData, HeartbeatData, MessageRequestMode, QueryAssignmentRequestBody,
    SetMessageRequestModeRequestBody, TopicRouteData,
};
use proto::headers::GetRouteInfoRequest;
use proto::{Command, MessageQueue, RequestCode};

use super::popping::Poller;
use super::requests::Kind;
use super::{Lifecycle, PopConsumer, PopEvent, PopMode, PopOutput, PopTimer};
use crate::membership;

/// `AllocateMessageQueueAveragely.getName()`: the strategy the broker allocates with.
const STRATEGY: &str = "AVG";

impl PopConsumer {
    /// Asks a name server for every subscribed topic's route.
    pub(super) fn refresh_routes(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let Some(namesrv) = self.cluster.name_server().map(str::to_owned) else {
            return;
        };
        for topic in self.subscriptions.keys().cloned().collect::<Vec<_>>() {
            let header = GetRouteInfoRequest {
                topic: topic.clone(),
                accept_standard_json_only: Some(true),
            };
            let command = Command::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header);
            self.request(now, &namesrv, command, Kind::Route(topic));
        }
    }

    /// A route arrived: new brokers hear a heartbeat at once, the topic's masters are told
    /// to serve it by pop, and the assignment query follows.
    pub(super) fn on_route(&mut self, now: Instant, topic: &str, route: TopicRouteData) {
        let change = self.cluster.update_route(topic, route);
        if change.new_broker {
            let addrs = self.cluster.broker_addrs();
            self.heartbeat_to(now, addrs);
            self.timers
                .reset(now + self.config.heartbeat_interval, PopTimer::Heartbeat);
        }
        if self.config.set_request_mode {
            self.set_request_mode(now, topic);
        }
        // Query once a broker knows this member: the heartbeat answer brings the round forward
        // (a broker without our heartbeat answers with no assignment).
        if !change.new_broker {
            self.timers.reset_earlier(now, PopTimer::Rebalance);
        }
    }

    /// The master address of each broker of `topic`'s route, by broker name.
    fn masters_of(&self, topic: &str) -> Vec<String> {
        let Some(route) = self.cluster.route(topic) else {
            return Vec::new();
        };
        let names: BTreeSet<&str> = route
            .broker_datas
            .iter()
            .map(|b| b.broker_name.as_str())
            .collect();
        names
            .into_iter()
            .filter_map(|name| self.cluster.master_addr(name))
            .collect()
    }

    /// `SET_MESSAGE_REQUEST_MODE` to POP for `topic`, once per master.
    fn set_request_mode(&mut self, now: Instant, topic: &str) {
        for addr in self.masters_of(topic) {
            if !self.mode_set.insert((addr.clone(), topic.to_owned())) {
                continue;
            }
            let body = SetMessageRequestModeRequestBody {
                topic: topic.to_owned(),
                consumer_group: self.config.group.clone(),
                mode: MessageRequestMode::Pop,
                pop_share_queue_num: self.config.pop_share_queue_num,
            };
            let command = Command::request_with_fields(
                RequestCode::SET_MESSAGE_REQUEST_MODE,
                proto::ExtFields::new(),
            )
            .with_body(body.encode());
            self.request(now, &addr, command, Kind::SetMode);
        }
    }

    /// `HEART_BEAT` with every subscription to each of `addrs`.
    pub(super) fn heartbeat_to(&mut self, now: Instant, addrs: impl IntoIterator<Item = String>) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let data = HeartbeatData {
            client_id: self.client_id.clone(),
            consumer_data_set: vec![ConsumerData {
                group_name: self.config.group.clone(),
                // Java's push consumer in pop mode registers as a push consumer.
                consume_type: proto::body::ConsumeType::Passively,
                message_model: proto::body::MessageModel::Clustering,
                subscription_data_set: self.subscriptions.values().cloned().collect(),
                ..ConsumerData::default()
            }],
            ..HeartbeatData::default()
        };
        let body = data.encode();
        for addr in addrs {
            self.request(now, &addr, membership::heartbeat(&body), Kind::Heartbeat);
        }
    }

    /// One `QUERY_ASSIGNMENT` per topic: the broker answers for every broker of the topic
    /// (`QueryAssignmentProcessor.doLoadBalance` reads the whole route), so one is enough; a
    /// failure moves to the next broker at the next round.
    pub(super) fn query_assignments(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        for topic in self.subscriptions.keys().cloned().collect::<Vec<_>>() {
            let masters = self.masters_of(&topic);
            if masters.is_empty() {
                continue;
            }
            let addr = masters[self.assignment_turn % masters.len()].clone();
            let body = QueryAssignmentRequestBody {
                topic: topic.clone(),
                consumer_group: self.config.group.clone(),
                client_id: self.client_id.clone(),
                strategy_name: STRATEGY.into(),
                message_model: proto::body::MessageModel::Clustering,
            };
            let command = Command::request_with_fields(
                RequestCode::QUERY_ASSIGNMENT,
                proto::ExtFields::new(),
            )
            .with_body(body.encode());
            self.request(now, &addr, command, Kind::Assignment(topic));
        }
    }

    /// The queues a broker assigned for `topic`: pollers start and stop to match (push mode),
    /// and [`PopEvent::Assigned`] tells the application when the set changed.
    pub(super) fn apply_assignment(&mut self, topic: &str, queues: BTreeSet<MessageQueue>) {
        let old = self.assignment.get(topic).cloned().unwrap_or_default();
        if old == queues {
            return;
        }
        if self.config.mode == PopMode::Push {
            self.pollers
                .retain(|mq, _| mq.topic() != topic || queues.contains(mq));
            for mq in &queues {
                if !self.pollers.contains_key(mq) {
                    self.next_poller += 1;
                    self.pollers.insert(
                        mq.clone(),
                        Poller {
                            seq: self.next_poller,
                            topic: topic.to_owned(),
                            in_flight: false,
                            waiting: false,
                        },
                    );
                }
            }
        }
        let outward: Vec<MessageQueue> = queues
            .iter()
            .map(|mq| match &self.namespace {
                Some(ns) => ns.unwrap_queue(mq),
                None => mq.clone(),
            })
            .collect();
        self.outputs.push_back(PopOutput::Event(PopEvent::Assigned {
            topic: self.outward_name(topic),
            queues: outward,
        }));
        self.assignment.insert(topic.to_owned(), queues);
    }
}

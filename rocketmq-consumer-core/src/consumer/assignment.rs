//! Which queues are ours: topic routes from the name server, heartbeats to every broker,
//! rebalancing by the group's strategy, and queues taken on or revoked (`remoting-protocol.md`
//! §5, §6).

use std::collections::BTreeSet;
use std::time::Instant;

use proto::body::{
    CheckClientRequestBody, ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData,
    TopicRouteData,
};
use proto::headers::{
    CheckClientConfigRequest, GetConsumerListByGroupRequest, GetRouteInfoRequest,
};
use proto::{Command, MessageQueue, RequestCode};

use super::{Consumer, Lifecycle, PendingKind, Phase, QueueKey};
use crate::config::{ConsumeFrom, ConsumeMode, MessageModel};
use crate::membership;
use crate::output::{Event, FailureReason, Output, RequestId};
use crate::rebalance;
use crate::timer::Timer;

impl Consumer {
    /// A broker cannot evaluate the topic's SQL92 expression: drop the subscription and its
    /// queues, and tell the brokers at the next heartbeat.
    pub(super) fn reject_subscription(&mut self, now: Instant, topic: &str, reason: FailureReason) {
        if self.subscriptions.remove(topic).is_none() {
            return;
        }
        self.cluster.forget_route(topic);
        self.apply_assignment(now, topic, BTreeSet::new());
        self.outputs
            .push_back(Output::Event(Event::SubscriptionRejected {
                topic: topic.to_owned(),
                reason,
            }));
        self.timers.reset(now, Timer::Heartbeat);
    }

    // ----- routes and heartbeats -----

    pub(super) fn refresh_routes(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let Some(namesrv) = self.cluster.name_server().map(str::to_owned) else {
            return;
        };
        let topics: Vec<String> = self.subscriptions.keys().cloned().collect();
        for topic in topics {
            let header = GetRouteInfoRequest {
                topic: topic.clone(),
                accept_standard_json_only: Some(true),
            };
            self.request(
                now,
                &namesrv,
                Command::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header),
                PendingKind::Route(topic),
            );
        }
    }

    /// The name server's route of `topic`; `None` when it knows no such topic.
    pub(super) fn on_route(&mut self, now: Instant, topic: &str, route: Option<TopicRouteData>) {
        let Some(route) = route else {
            // The retry topic appears once a broker has our heartbeat; others may come later,
            // and a topic whose only broker is restarting comes back when it registers again:
            // asked again after `rebalance_retry` (1 s), so pulls resume within about that of
            // the registration rather than at the next 30 s refresh.
            if self.cluster.forget_route(topic) {
                self.rebalance(now);
            }
            self.timers
                .reset(now + self.config.rebalance_retry, Timer::RouteRefresh);
            return;
        };
        if self.unchecked.remove(topic)
            && let Some(addr) = route
                .broker_datas
                .iter()
                .find_map(|b| b.master_or_any_addr().map(str::to_owned))
            && let Some(subscription) = self.subscriptions.get(topic)
        {
            let body = CheckClientRequestBody {
                client_id: self.client_id.clone(),
                group: self.config.group.clone(),
                subscription_data: subscription.clone(),
                namespace: None,
            }
            .encode();
            let request = Command::request(
                RequestCode::CHECK_CLIENT_CONFIG,
                &CheckClientConfigRequest {},
            )
            .with_body(body);
            self.request(
                now,
                &addr,
                request,
                PendingKind::CheckClient(topic.to_owned()),
            );
        }
        // A route that comes back (its brokers were gone, e.g. restarting) may bring brokers
        // that forgot this consumer: tell them again.
        let change = self.cluster.update_route(topic, route);
        if change.new_broker {
            self.rebalance_after_heartbeat = true;
            self.heartbeat(now);
        } else if change.queues_changed {
            self.rebalance(now);
        }
    }

    pub(super) fn heartbeat(&mut self, now: Instant) {
        let addrs = self.cluster.broker_addrs();
        self.heartbeat_to(now, addrs);
    }

    /// Heartbeats on the connections that have requests in flight and heard nothing for
    /// `probe_after` (see [`crate::conn::Connections::due_probes`]).
    pub(super) fn probe_quiet_connections(&mut self, now: Instant) {
        let cluster = &self.cluster;
        // Brokers only: a name server answers HEART_BEAT with REQUEST_CODE_NOT_SUPPORTED, and
        // its short requests time out (3 s) and close it after `close_after_timeouts`. And only
        // with a request out for that long too: one sent a moment ago proves nothing yet.
        let quiet = self
            .link
            .due_probes(now, self.config.probe_after, |addr| cluster.is_broker(addr));
        if !quiet.is_empty() {
            self.heartbeat_to(now, quiet);
        }
    }

    pub(super) fn heartbeat_to(&mut self, now: Instant, addrs: impl IntoIterator<Item = String>) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let data = HeartbeatData {
            client_id: self.client_id.clone(),
            consumer_data_set: vec![ConsumerData {
                group_name: self.config.group.clone(),
                consume_type: if self.config.consume_mode == ConsumeMode::Poll {
                    ConsumeType::Actively
                } else {
                    ConsumeType::Passively
                },
                message_model: match self.config.message_model {
                    MessageModel::Broadcasting => proto::body::MessageModel::Broadcasting,
                    _ => proto::body::MessageModel::Clustering,
                },
                consume_from_where: match self.config.consume_from {
                    ConsumeFrom::Last => ConsumeFromWhere::LastOffset,
                    ConsumeFrom::First => ConsumeFromWhere::FirstOffset,
                    ConsumeFrom::Timestamp(_) => ConsumeFromWhere::Timestamp,
                },
                subscription_data_set: self.subscriptions.values().cloned().collect(),
                ..ConsumerData::default()
            }],
            ..HeartbeatData::default()
        };
        let body = data.encode();
        for addr in addrs {
            self.request(
                now,
                &addr,
                membership::heartbeat(&body),
                PendingKind::Heartbeat,
            );
        }
    }

    // ----- rebalance -----

    pub(super) fn rebalance(&mut self, now: Instant) {
        if self.lifecycle != Lifecycle::Running {
            return;
        }
        let topics: Vec<String> = self.subscriptions.keys().cloned().collect();
        for topic in topics {
            if let Some(fixed) = self.assigned.get(&topic) {
                let fixed = fixed.clone();
                self.apply_assignment(now, &topic, fixed);
                continue;
            }
            let Some(route) = self.cluster.route(&topic) else {
                // No route: the topic is gone, or not there yet; own none of its queues.
                self.apply_assignment(now, &topic, BTreeSet::new());
                continue;
            };
            if self.config.message_model == MessageModel::Broadcasting {
                let all = route.subscribe_queues(&topic).into_iter().collect();
                self.apply_assignment(now, &topic, all);
                continue;
            }
            let masters: Vec<String> = route
                .broker_datas
                .iter()
                .filter_map(|b| b.master_or_any_addr().map(str::to_owned))
                .collect();
            if masters.is_empty() {
                continue;
            }
            // Java asks a random broker of the topic (`findBrokerAddrByTopic`).
            let pick = (self.next_random() % masters.len() as u64) as usize;
            let addr = masters[pick].clone();
            let header = GetConsumerListByGroupRequest {
                consumer_group: self.config.group.clone(),
            };
            self.request(
                now,
                &addr,
                Command::request(RequestCode::GET_CONSUMER_LIST_BY_GROUP, &header),
                PendingKind::ConsumerList(topic),
            );
        }
    }

    pub(super) fn apply_rebalance(&mut self, now: Instant, topic: &str, consumer_ids: &[String]) {
        let Some(route) = self.cluster.route(topic) else {
            return;
        };
        let queues = route.subscribe_queues(topic);
        let mine = rebalance::allocate(
            &self.config.strategy,
            &self.client_id,
            &queues,
            consumer_ids,
        );
        self.handovers
            .members_listed(topic, consumer_ids, &self.client_id);
        if !consumer_ids.iter().any(|id| id == &self.client_id) {
            // The broker does not list us yet (heartbeat in flight): try again soon.
            self.timers
                .reset(now + self.config.rebalance_retry, Timer::Rebalance);
        }
        self.apply_assignment(now, topic, mine.into_iter().collect());
    }

    pub(super) fn apply_assignment(
        &mut self,
        now: Instant,
        topic: &str,
        target: BTreeSet<MessageQueue>,
    ) {
        let current: BTreeSet<MessageQueue> = self
            .queues
            .iter()
            .filter(|s| s.mq.topic() == topic && s.phase != Phase::Revoking)
            .map(|s| s.mq.clone())
            .collect();
        if self.config.message_model == MessageModel::Clustering
            && let Some(route) = self.cluster.route(topic)
        {
            let routed: BTreeSet<MessageQueue> =
                route.subscribe_queues(topic).into_iter().collect();
            self.stranded
                .given_away(topic, |mq| routed.contains(mq), |mq| target.contains(mq));
        }
        let change = rebalance::diff(&current, &target);
        // With the hook, the application hears of the revoke first; each queue then waits for
        // its answer as well as for its in-flight deliveries.
        let hook = (self.config.revoke_hook && !change.removed.is_empty())
            .then(|| self.app_answers.next_id());
        if let Some(request) = hook {
            self.outputs.push_back(Output::Revoking {
                request,
                queues: change.removed.clone(),
            });
        }
        for mq in &change.removed {
            self.revoke(now, mq, hook);
        }
        let mut to_lock = Vec::new();
        for mq in &change.added {
            to_lock.extend(self.add_queue(now, mq.clone()));
        }
        // Lock new queues at once (orderly, hand-overs), one request per broker, not at the
        // next renewal.
        if !to_lock.is_empty() {
            self.lock_queues(now, to_lock);
        }
        if !change.added.is_empty() {
            self.outputs
                .push_back(Output::Event(Event::Assigned(change.added)));
        }
    }

    /// Starts consuming `mq`; returns its key when it must be locked first (orderly, or a
    /// hand-over).
    pub(super) fn add_queue(&mut self, now: Instant, mq: MessageQueue) -> Option<QueueKey> {
        if let Some(old) = self.queues.key_of(&mq) {
            // Revoked but still draining: finish the old life before the new one starts.
            if self
                .queues
                .get(old)
                .is_some_and(|s| s.phase == Phase::Revoking)
            {
                self.finish_revoke(now, old);
            } else {
                return None;
            }
        }
        let handed_over = self.hands_over(mq.topic());
        let (key, epoch) = self.insert_queue(mq, None, None);
        if self.needs_lock() {
            return Some(key);
        }
        if handed_over {
            // Its last owner may still be finishing it: its offset is read once the lock is
            // ours (see `handover`).
            self.await_handover(now, key);
            return Some(key);
        }
        self.resolve_offset(now, key, epoch);
        None
    }

    /// Revokes `mq`: it finishes (final commit, orderly unlock) once its in-flight deliveries
    /// are done and, with `hook`, the application answered it, or at the revoke deadline.
    pub(super) fn revoke(&mut self, now: Instant, mq: &MessageQueue, hook: Option<RequestId>) {
        let Some(state) = self.queues.key_of(mq).and_then(|k| self.queues.get_mut(k)) else {
            return;
        };
        state.phase = Phase::Revoking;
        state.revoke_hook = hook;
        let (key, epoch) = (state.key, state.epoch);
        if hook.is_some() || self.deliveries.any_of(key, epoch) {
            self.timers.set(
                now + self.config.revoke_drain_timeout,
                Timer::RevokeDeadline(key, epoch),
            );
        } else {
            self.finish_revoke(now, key);
        }
    }

    pub(super) fn maybe_finish_revoke(&mut self, now: Instant, key: QueueKey) {
        let Some(state) = self.queues.get(key) else {
            return;
        };
        let epoch = state.epoch;
        if state.revoke_hook.is_none() && !self.deliveries.any_of(key, epoch) {
            self.finish_revoke(now, key);
        }
    }

    /// The application answered revoke hook `request`: its queues finish once drained.
    pub(super) fn on_revoke_done(&mut self, now: Instant, request: RequestId) {
        let answered: Vec<QueueKey> = self
            .queues
            .iter_mut()
            .filter(|s| s.phase == Phase::Revoking && s.revoke_hook == Some(request))
            .map(|s| {
                s.revoke_hook = None;
                s.key
            })
            .collect();
        for key in answered {
            self.maybe_finish_revoke(now, key);
        }
    }

    /// Commits the queue's offset and forgets it; in-flight completions become stale.
    pub(super) fn finish_revoke(&mut self, now: Instant, key: QueueKey) {
        let Some(state) = self.queues.remove(key) else {
            return;
        };
        // Only a queue that got its start offset has anything to commit; an orderly queue
        // whose lease lapsed may have a new owner by now, who must not see its offset move.
        let committable =
            state.persisted.is_some() && (!self.needs_lock() || state.lease_valid(now));
        // The queue's broker lock: an orderly lease, or a hand-over lock (`handover`).
        let mut unlock =
            (self.needs_lock() && state.lease.is_some()) || self.handovers.holds(&state.mq);
        self.handovers.forget(key);
        if committable {
            let offset = state.commit_point();
            let routed = self.master_addr(state.mq.broker_name());
            // A queue whose lock we hold commits even while its broker's connection is down
            // (a new one opens, or the commit fails at once and goes once more after the
            // reconnect backoff: `commit_retry`), as the next owner waits for the lock.
            let reachable = routed.filter(|addr| unlock || self.link.is_open(addr));
            match reachable {
                Some(addr) if unlock => {
                    // The unlock waits for the commit's answer: Apache's brokers run commits
                    // on the consume-manage thread pool and unlocks on the admin pool
                    // (`BrokerController.registerProcessor`), so an unlock sent right behind
                    // a oneway commit can take effect first, and the next owner then locks
                    // the queue and reads the offset before the commit lands.
                    let command = self.commit_command(&state.mq, offset);
                    let kind = PendingKind::HandOverCommit(state.mq.clone(), offset);
                    self.request_commit(now, &addr, command, kind);
                    self.handovers.release_after_commit(state.mq.clone());
                    unlock = false;
                }
                // Confirmed, behind this consumer's other commits to the broker, so an older
                // commit of the queue cannot be stored after it (see `offsets`).
                Some(addr) if self.config.message_model == MessageModel::Clustering => {
                    let command = self.commit_command(&state.mq, offset);
                    let kind = PendingKind::Persist(key, state.epoch);
                    self.request_commit(now, &addr, command, kind);
                }
                Some(_) => self.store_offset(now, &state.mq, offset),
                None => {
                    self.store_offset(now, &state.mq, offset);
                    if self.config.message_model == MessageModel::Clustering {
                        // The commit cannot reach the broker (gone from the route, or its
                        // connection down): kept, so a broker that crashed and lost it does
                        // not send us back.
                        self.stranded.strand(state.mq.clone(), offset);
                    }
                }
            }
        }
        if unlock {
            self.release_lock(now, &state.mq);
        }
        self.outputs
            .push_back(Output::Event(Event::Revoked(vec![state.mq])));
    }
}

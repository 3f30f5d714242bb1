//! The producer as a sans-IO state machine, [`Producer`], in the consumer's shape: the
//! application's sends go in ([`Producer::send`]), with what happens on the connections
//! (`handle_connected`, `handle_disconnected`, `handle_command`) and the time
//! (`handle_timeout`); connections to open, frames to write and each send's result come out
//! ([`Producer::poll_output`]), with the next deadline ([`Producer::poll_timeout`]). It keeps
//! its requests on the same request layer as the consumers (one connection per address with
//! the reconnect backoff and connect deadline, opaques, deadlines, a lost connection's requests
//! failed at once, a connection given up after `close_after_timeouts` timeouts in a row), so
//! the async producer in `rocketmq-driver` only moves bytes, as it does for the consumers.
//!
//! The coordinator calls down into the pieces of policy, each a pure part of its own:
//!
//! 1. [`ProducerMessage`]s are turned into a [`Prepared`] send once ([`Prepared::single`],
//!    [`Prepared::batch`]): checked, given their `UNIQ_KEY`s, encoded. Every attempt reuses it,
//!    so a retried message keeps its id (as Java's `MessageClientIDSetter` ids do).
//! 2. [`Routes`] caches each topic's [`PublishRoute`] and picks the [`Target`] of an attempt:
//!    round robin (skipping the broker that just failed, as Java's
//!    `TopicPublishInfo.selectOneMessageQueue(lastBrokerName)`), or by sharding key (Java's
//!    `SelectMessageQueueByHash`: the key's `String.hashCode` modulo the writable queues), so the
//!    same key lands on the same queue as long as the route does not change, whichever client
//!    (Java or this one) sends it.
//! 3. [`Prepared::request`] builds the `SEND_MESSAGE_V2` / `SEND_BATCH_MESSAGE` command for a
//!    target; [`Prepared::interpret`] reads the broker's answer into a [`SendResult`] or a
//!    [`SendError`].
//! 4. [`Attempts::after`] says whether a failure is retried and whether the route is fetched
//!    again first (`DefaultMQProducerImpl.sendDefaultImpl`).
//! 5. [`SendPlan`] is one send's whole policy (route lookups in turn, the target of each
//!    attempt, retries, the send timeout); the coordinator keeps one per send in flight, and
//!    `lookups` makes a burst of sends to a topic without a route ask the name server once.

mod attempts;
mod config;
mod lookups;
mod message;
mod outcome;
mod output;
mod plan;
mod prepared;
mod routes;
#[cfg(test)]
mod tests;

pub use attempts::{Attempts, Retry};
pub use config::ProducerConfig;
pub use message::ProducerMessage;
pub use outcome::{SendError, SendResult, SendStatus};
pub use output::{ProducerOutput, SendId};
pub use plan::{SendPlan, Step};
pub use prepared::{Prepared, UniqueIds};
pub use proto::body::java_string_hash;
pub use routes::{
    PublishRoute, Routes, Target, default_route_from_response, route_from_response, route_request,
    shard_index,
};

pub use crate::error::ConfigError;

/// The property a sharding key travels in (5.x `MessageConst.PROPERTY_SHARDING_KEY`), so
/// consumers can see which key put a message on its queue.
pub const SHARDING_KEY: &str = "__SHARDINGKEY";

/// The topic whose settings an auto-created topic copies (`TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub const DEFAULT_TOPIC: &str = "TBW102";

/// Queues of a topic the broker creates on first send (`DefaultMQProducer.defaultTopicQueueNums`).
const DEFAULT_TOPIC_QUEUE_NUMS: i32 = 4;

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use proto::Command;

use crate::link::{Due, Link, Rules};
use crate::output::ConnId;
use crate::requests::Pending;
use crate::signer::Signer;
use crate::timer::TimerQueue;
use lookups::Lookups;

/// The producer as a state machine (see the module docs). Sends are independent: each has its
/// [`SendPlan`], and they share the route cache and the request layer.
#[derive(Debug)]
pub struct Producer {
    config: ProducerConfig,
    routes: Routes,
    /// Signs the requests of sends started from now on.
    signer: Signer,
    /// The connections and the requests in flight, each for a send (a route lookup or an
    /// attempt).
    link: Link<Request>,
    /// Sends whose address waits its reconnect backoff, by when they go on.
    deferred: TimerQueue<SendId>,
    /// The sends not over yet.
    sends: BTreeMap<SendId, Sending>,
    lookups: Lookups,
    /// Why each address that failed last failed, for the sends refused while it is down.
    failures: BTreeMap<String, String>,
    outputs: VecDeque<ProducerOutput>,
    next_send: u64,
    closed: bool,
}

/// A send in flight.
#[derive(Debug)]
struct Sending {
    plan: SendPlan,
    /// Where its last request went.
    peer: String,
}

/// What a request in flight is for.
#[derive(Clone, Copy, Debug)]
struct Request {
    send: SendId,
    /// A route lookup (else an attempt to store the message).
    lookup: bool,
}

impl Producer {
    /// A producer for `config` (checked, as [`ProducerConfig::validate`] does).
    pub fn new(config: ProducerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            routes: Routes::new(config.route_ttl).with_retry_interval(config.route_retry_interval),
            signer: Signer::new(config.credentials.clone(), config.signature_algorithm),
            link: Link::new(Rules {
                connect_timeout: config.connect_timeout,
                reconnect_backoff: config.reconnect_backoff,
                close_after_timeouts: config.close_after_timeouts,
            }),
            deferred: TimerQueue::default(),
            sends: BTreeMap::new(),
            lookups: Lookups::default(),
            failures: BTreeMap::new(),
            outputs: VecDeque::new(),
            next_send: 0,
            closed: false,
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ProducerConfig {
        &self.config
    }

    // ----- inputs -----

    /// Starts sending `prepared` at `now`; its result comes as [`ProducerOutput::Sent`], within
    /// the send timeout. A closed producer fails it at once ([`SendError::Closed`]).
    pub fn send(&mut self, now: Instant, prepared: Prepared) -> SendId {
        self.next_send += 1;
        let send = SendId(self.next_send);
        if self.closed {
            self.outputs.push_back(ProducerOutput::Sent {
                send,
                result: Err(SendError::Closed),
                peer: String::new(),
            });
            return send;
        }
        let plan = SendPlan::new(&self.config, prepared, now).signed_with(self.signer.clone());
        self.sends.insert(
            send,
            Sending {
                plan,
                peer: String::new(),
            },
        );
        self.step(now, send);
        send
    }

    /// Signs every send started from now on with `credentials` (`None`: unsigned), so rotated
    /// keys take effect without a restart.
    pub fn set_credentials(&mut self, credentials: Option<proto::acl::Credentials>) {
        self.signer.set_credentials(credentials);
    }

    /// The connection `conn` opened: what waited for it goes out.
    pub fn handle_connected(&mut self, now: Instant, conn: ConnId) {
        let (_, queued) = self.link.connected(now, conn);
        self.link.write(conn, queued);
    }

    /// The connection `conn` failed to open, or was lost, for `reason` (what the system or the
    /// TLS handshake said, which a send that fails for it reports).
    pub fn handle_disconnected(&mut self, now: Instant, conn: ConnId, reason: &str) {
        let unsent = self.link.is_opening(conn);
        if let Some(addr) = self.link.disconnected(now, conn) {
            self.fail_lost(now, conn, addr, reason, unsent);
        }
    }

    /// A frame arrived on `conn`: the answer to one of our requests. Requests from a broker (a
    /// plain producer is asked nothing it must answer) and answers nobody waits for any more
    /// (timed out) are dropped.
    pub fn handle_command(&mut self, now: Instant, conn: ConnId, command: Command) {
        if !command.is_response() {
            return;
        }
        if let Some(pending) = self.link.answered(now, conn, command.opaque) {
            self.answer(now, pending, Ok(command), false);
        }
    }

    /// Time passed: fire every deadline due at `now`. Calling it early is harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(due) = self.link.next_due(now) {
            match due {
                Due::TimedOut(pending) => {
                    let conn = pending.conn;
                    let open = !self.link.is_opening(conn);
                    let peer = pending.addr.clone();
                    // One still opening was never written.
                    self.answer(now, pending, Err(SendError::Timeout { peer }), !open);
                    // An open connection on which enough requests in a row timed out stopped
                    // answering (the consumers' rule); one still opening is the opening
                    // deadline's to give up.
                    if open
                        && self.link.streak_says_close(conn)
                        && let Some(addr) = self.link.close(now, conn)
                    {
                        self.fail_lost(now, conn, addr, "requests in a row timed out", false);
                    }
                }
                Due::OpenTimedOut { conn, addr } => {
                    self.fail_lost(now, conn, addr, "connect timed out", true);
                }
            }
        }
        while let Some(send) = self.deferred.pop_due(now) {
            self.step(now, send);
        }
    }

    /// Closes the producer: every connection closes, every send in flight fails
    /// ([`SendError::Disconnected`] for one with a request out, whose message may have been
    /// stored; [`SendError::Closed`] otherwise), and later sends fail with
    /// [`SendError::Closed`].
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.lookups = Lookups::default();
        self.deferred.clear();
        let out: Vec<SendId> = self.link.close_all().into_iter().map(|r| r.send).collect();
        for (send, sending) in std::mem::take(&mut self.sends) {
            let result = if out.contains(&send) {
                Err(SendError::Disconnected {
                    peer: sending.peer.clone(),
                    reason: "the producer was closed".to_owned(),
                })
            } else {
                Err(SendError::Closed)
            };
            self.outputs.push_back(ProducerOutput::Sent {
                send,
                result,
                peer: sending.peer,
            });
        }
    }

    // ----- outputs -----

    /// The next piece of work for the driver.
    pub fn poll_output(&mut self) -> Option<ProducerOutput> {
        if let Some(wire) = self.link.poll_wire() {
            return Some(ProducerOutput::Wire(wire));
        }
        self.outputs.pop_front()
    }

    /// When to call [`Producer::handle_timeout`] next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let deferred = self.deferred.next().map(|(at, _)| at);
        [self.link.poll_timeout(), deferred]
            .into_iter()
            .flatten()
            .min()
    }

    /// Sends not over yet.
    pub fn sends_in_flight(&self) -> usize {
        self.sends.len()
    }

    // ----- the coordinator -----

    /// Asks `send`'s plan what comes next and does it.
    fn step(&mut self, now: Instant, send: SendId) {
        let Some(sending) = self.sends.get_mut(&send) else {
            return;
        };
        match sending.plan.next_step(&mut self.routes, now) {
            Step::Done(result) => self.finish(now, send, result),
            Step::LookUp { addr, command } => {
                let topic = sending.plan.prepared().topic().to_owned();
                // Another send is asking already: this one goes on with its answer.
                if self.lookups.ask(&topic, send) {
                    self.request(now, send, true, &addr, command);
                }
            }
            Step::Send { addr, command } => self.request(now, send, false, &addr, command),
            Step::Wait { until } => self.deferred.set(until, send),
        }
    }

    /// Puts a request of `send` on the connection to `addr`, due by the send's deadline.
    fn request(&mut self, now: Instant, send: SendId, lookup: bool, addr: &str, command: Command) {
        let Some(sending) = self.sends.get_mut(&send) else {
            return;
        };
        sending.peer = addr.to_owned();
        let timeout = sending
            .plan
            .request_deadline(now)
            .saturating_duration_since(now);
        let kind = Request { send, lookup };
        let Err(pending) = self.link.request(now, addr, command, kind, timeout) else {
            return;
        };
        // The address failed a moment ago and waits its reconnect backoff: the request goes
        // then, if the send has time left (the plan asks for the same request again), rather
        // than failing at once.
        if let Some(at) = self
            .link
            .down_until(now, addr)
            .filter(|at| *at < pending.deadline)
        {
            self.deferred.set(at, send);
            return;
        }
        let reason = self.failures.get(addr).map_or_else(
            || "connection failed".to_owned(),
            |why| format!("{why} (not retried before the reconnect backoff)"),
        );
        let error = SendError::Disconnected {
            peer: addr.to_owned(),
            reason,
        };
        self.answer(now, pending, Err(error), false);
    }

    /// A request of a send ended: its plan takes the answer, then goes on; a route lookup's
    /// end lets the sends that waited for it go on too. `unsent`: it failed on a connection
    /// that never opened, so it was never written.
    fn answer(
        &mut self,
        now: Instant,
        pending: Pending<Request>,
        answer: Result<Command, SendError>,
        unsent: bool,
    ) {
        let Request { send, lookup } = pending.kind;
        let Some(sending) = self.sends.get_mut(&send) else {
            return;
        };
        let topic = sending.plan.prepared().topic().to_owned();
        match answer {
            Err(error) if unsent => sending.plan.handle_unsent(&mut self.routes, now, error),
            answer => sending.plan.handle_answer(&mut self.routes, now, answer),
        }
        let released = if lookup {
            self.lookups.answered(&topic, send)
        } else {
            Vec::new()
        };
        self.step(now, send);
        for waiting in released {
            self.step(now, waiting);
        }
    }

    /// `send` is over.
    fn finish(&mut self, now: Instant, send: SendId, result: Result<SendResult, SendError>) {
        let Some(sending) = self.sends.remove(&send) else {
            return;
        };
        self.outputs.push_back(ProducerOutput::Sent {
            send,
            result,
            peer: sending.peer,
        });
        for waiting in self.lookups.forget(send) {
            self.step(now, waiting);
        }
    }

    /// `conn` to `addr` is gone for `reason`: its requests fail at once (`unsent`: it never
    /// opened, so none was written), and every topic with a queue there is looked up again by
    /// its next send, as the broker may have left the routes (or come back in them).
    fn fail_lost(&mut self, now: Instant, conn: ConnId, addr: String, reason: &str, unsent: bool) {
        self.failures.insert(addr.clone(), reason.to_owned());
        self.routes.invalidate_broker(&addr);
        while let Some(pending) = self.link.next_lost(conn) {
            let error = SendError::Disconnected {
                peer: addr.clone(),
                reason: reason.to_owned(),
            };
            self.answer(now, pending, Err(error), unsent);
        }
    }
}
